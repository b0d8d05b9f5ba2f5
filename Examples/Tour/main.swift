import AsyncHTTPClient
import HTTPDNSClient
import HTTPDNSCore
import HTTPDNSInterceptor
import NIOCore
import NIOSSL

// Resolve through the HTTPDNS service, then send the request straight to the answer: the name stays in the Host
// header, in SNI and in the certificate check.
var service = ServiceConnection(servers: [try ServiceEndpoint(parsing: "https://127.0.0.154:8443")])
service.extraTrustRootsPEMFile = "cert.pem"
let source = try NativeServiceSource(configuration: .init(connection: service))

var configuration = InterceptingHTTPClient.Configuration()
configuration.tls.additionalTrustRoots = [.file("cert.pem")]

// The resolver owns its source; each scope shuts down what it made when its body ends, however it ends.
try await withHostResolver(trusted: source, fallbacks: []) { resolver in
    try await withInterceptingHTTPClient(resolver: resolver, configuration: configuration) { client in
        let answer = try await client.execute(method: "GET", url: "https://tour.test:8443/healthz", timeout: .seconds(5))
        let body = try await answer.response.body.collect(upTo: 1 << 16)
        print(answer.response.status.code, answer.connectedAddress.map { "\($0)" } ?? "-", String(buffer: body))
    }
}
