import Foundation

/// A self-signed certificate made now with openssl (P-256, one day unless asked otherwise), in a directory removed
/// afterwards: for tests of TLS that must not rely on anything made beforehand.
public enum TestCertificate {
    /// Runs `body` with the paths of a certificate for `subjectAltName` (`IP:127.0.0.1,DNS:serve.test`) and its key.
    public static func with<T>(
        subjectAltName: String,
        days: Int = 1,
        _ body: (_ certificate: String, _ key: String) async throws -> T
    ) async throws -> T {
        guard let openssl = ChildProcess.find("openssl") else {
            throw ChildProcess.SpawnError(description: "openssl is missing: run scripts/install-deps.sh")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-tls-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let made = try await ChildProcess.run(
            executable: openssl,
            arguments: [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", "\(directory)/key.pem", "-out", "\(directory)/cert.pem", "-days", "\(days)",
                "-subj", "/CN=httpdns test", "-addext", "subjectAltName=\(subjectAltName)",
            ]
        )
        guard made.status == .exited(0) else { throw ChildProcess.SpawnError(description: "openssl failed: \(made.stderr)") }
        return try await body("\(directory)/cert.pem", "\(directory)/key.pem")
    }
}
