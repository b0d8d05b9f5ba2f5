import HTTPDNSTesting
import Testing

/// The origin the interceptor's tests will talk to: a real nginx over HTTPS with name-based virtual hosts and a
/// certificate made at test time, reporting the SNI and the Host it saw. Checked here with curl, which sends a name's
/// SNI and Host to an address given by `--resolve`, as the interceptor will.
@Suite("nginx as a test origin", .timeLimit(.minutes(1)))
struct NginxOriginTests {
    @Test func reportsTheSNIAndHostEachRequestCarried() async throws {
        let curl = try #require(ChildProcess.find("curl"), "curl is missing: run scripts/install-deps.sh")
        try await TestCertificate.with(subjectAltName: "DNS:a.test,DNS:b.test") { certificate, key in
            try await withNginx(names: ["a.test", "b.test"], certificate: certificate, key: key) { origin in
                for name in ["a.test", "b.test"] {
                    let run = try await ChildProcess.run(
                        executable: curl,
                        arguments: [
                            "-s", "--cacert", certificate, "--resolve", "\(name):\(origin.port):\(origin.address)",
                            "https://\(name):\(origin.port)/path",
                        ]
                    )
                    #expect(run.status == .exited(0), "\(run)")
                    #expect(run.stdout == "sni=\(name) host=\(name):\(origin.port)\n")
                }
                // A name the certificate does not hold fails verification: curl exits 60.
                let wrong = try await ChildProcess.run(
                    executable: curl,
                    arguments: ["-s", "--cacert", certificate, "--resolve", "c.test:\(origin.port):\(origin.address)", "https://c.test:\(origin.port)/"]
                )
                #expect(wrong.status == .exited(60), "\(wrong)")
            }
        }
    }
}
