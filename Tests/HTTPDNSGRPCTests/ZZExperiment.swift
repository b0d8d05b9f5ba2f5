#if GRPC
import GRPCCore
import GRPCNIOTransportHTTP2
import HTTPDNSTesting
import Testing

@Suite("experiment")
struct ZZExperiment {
    @Test func stockIPv4TargetAfterStop() async throws {
        try await GRPCStage.with { stage in
            var config = HTTP2ClientTransport.Posix.Config.defaults
            config.http2.authority = "grpc.test"
            let transport = try HTTP2ClientTransport.Posix(
                target: .ipv4(pairs: [(host: "127.0.0.61", port: stage.port), (host: "127.0.0.62", port: stage.port)]),
                transportSecurity: .tls(stage.tls),
                config: config,
                serviceConfig: GRPCStage.retrying
            )
            try await withGRPCClient(transport: transport) { client in
                #expect(try await client.who().local == "127.0.0.61")
                #expect(try await client.whoStreaming(["a", "b"]).map(\.local) == ["127.0.0.61", "127.0.0.61"])
                await stage.stop("127.0.0.61", gracefully: false)
                let moved = try await client.who(waitForReady: true)
                #expect(moved.local == "127.0.0.62")
            }
        }
    }
}
#endif
