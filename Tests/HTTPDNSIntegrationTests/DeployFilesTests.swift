import Foundation
import HTTPDNSCore
import HTTPDNSInterceptor
import HTTPDNSServer
import HTTPDNSTesting
import Testing

/// deploy/: the alert rules pass promtool's checks and their unit tests, and the dashboard asks only for metric
/// families the code records.
@Suite("deploy files")
struct DeployFilesTests {
    /// The repository's root, from this file's path.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func promtool() throws -> String {
        try #require(ChildProcess.find("promtool"), "promtool is missing: run scripts/install-deps.sh")
    }

    @Test func theAlertRulesPassPromtoolAndTheirTests() async throws {
        let directory = Self.root.appendingPathComponent("deploy/prometheus").path
        let check = try await ChildProcess.run(executable: try Self.promtool(), arguments: ["check", "rules", "\(directory)/alerts.yml"])
        #expect(check.status == .exited(0), "\(check)")
        let test = try await ChildProcess.run(executable: try Self.promtool(), arguments: ["test", "rules", "\(directory)/alerts.test.yml"])
        #expect(test.status == .exited(0), "\(test)")
    }

    /// Every `httpdns_…` name in the dashboard's and the rules' queries is a family the code has help text for
    /// (histograms by their `_bucket`, `_sum` and `_count`).
    @Test func everyMetricAskedForIsOneTheCodeRecords() throws {
        var known = Set(ResolverMetricFamilies.help.keys).union(ServerMetricFamilies.help.keys).union(InterceptorMetricFamilies.help.keys)
        for name in known { known.formUnion(["\(name)_bucket", "\(name)_sum", "\(name)_count"]) }
        for file in ["deploy/grafana/httpdns-dashboard.json", "deploy/prometheus/alerts.yml"] {
            let text = try String(contentsOf: Self.root.appendingPathComponent(file), encoding: .utf8)
            let names = text.matches(of: /(httpdns_[a-z_]+|http_server_[a-z_]+)/).map { String($0.output.1) }
            #expect(!names.isEmpty)
            for name in Set(names) {
                #expect(known.contains(name), "\(file) asks for \(name), which nothing records")
            }
        }
        _ = try JSONSerialization.jsonObject(with: Data(contentsOf: Self.root.appendingPathComponent("deploy/grafana/httpdns-dashboard.json")))
    }
}
