#if GRPC
// The DocC catalog's example (Sources/HTTPDNSGRPC/HTTPDNSGRPC.docc/HTTPDNSGRPC.md, "Calling a service"), word for
// word between the markers: `CatalogExampleTests` checks that it is the catalog's, and runs it.
// catalog:begin
import GRPCCore
import GRPCNIOTransportHTTP2
import HTTPDNSCore
import HTTPDNSGRPC

/// Messages as UTF-8 text.
struct UTF8Coder: MessageSerializer, MessageDeserializer {
    func serialize<Bytes: GRPCContiguousBytes>(_ message: String) throws -> Bytes { Bytes(message.utf8) }
    func deserialize<Bytes: GRPCContiguousBytes>(_ bytes: Bytes) throws -> String {
        bytes.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }
}

/// Says hello to `host` (resolved through `source`, the trusted source) and returns its answer.
func sayHello(to host: HostName, port: Int, through source: any ResolutionSource, trustRoots: TLSConfig.TrustRootsSource) async throws -> String {
    var tls = HTTP2ClientTransport.Posix.TransportSecurity.TLS.defaults
    tls.trustRoots = trustRoots
    // The resolver owns its source; each scope shuts down what it made when its body ends, however it ends.
    return try await withHostResolver(trusted: source, fallbacks: [SystemSource()]) { resolver in
        try await withHTTPDNSGRPCClient(host: host, port: port, resolver: resolver, tls: tls) { client in
            try await client.unary(
                request: ClientRequest(message: "hello"),
                descriptor: MethodDescriptor(fullyQualifiedService: "echo.Echo", method: "Get"),
                serializer: UTF8Coder(),
                deserializer: UTF8Coder(),
                options: .defaults
            ) { response in try response.message }
        }
    }
}
// catalog:end
#endif
