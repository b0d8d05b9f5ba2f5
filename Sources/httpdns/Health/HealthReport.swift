import HTTPDNSCommandLine
import HTTPDNSCore
import HTTPDNSWire

/// What one round of `httpdns health` found: each service, each DNS server, each probe name's answers side by side,
/// and the verdict over all of it.
struct HealthReport: Sendable {
    struct Certificate: Sendable, Equatable {
        /// Whether the certificate was accepted (chain, name or address, and pins when configured).
        var valid: Bool
        /// Whole days until it expires, when it was read.
        var daysLeft: Int?
        /// Why it was not accepted.
        var problem: String?
    }

    /// How a service is asked.
    enum Transport: String, Sendable {
        /// An HTTPDNS service, through RFC 8484 DoH.
        case doh
        /// A DNS-over-TLS server (RFC 7858).
        case dot
    }

    struct Service: Sendable {
        /// The service's URL, or the DoT server's `tls://IP[:PORT]`.
        var url: String
        var transport: Transport
        var reachable: Bool
        /// The first probe name's answer, on a new connection in the first round (TCP and TLS included).
        var latencyMs: Double?
        /// Nil for plain HTTP.
        var certificate: Certificate?
        var error: String?
        var isPlainHTTP: Bool
    }

    struct DNSServer: Sendable {
        var address: String
        var reachable: Bool
        /// The first probe name's answer.
        var latencyMs: Double?
        var error: String?
    }

    /// One source's answer for a probe name.
    enum Result: Sendable, Equatable, CustomStringConvertible {
        case addresses([IPAddress])
        case nameNotFound
        case noData
        /// No answer: the error's code (`timeout`, `refused` …) and what it said.
        case failed(code: String, message: String)

        var answered: Bool {
            if case .failed = self { return false }
            return true
        }

        var description: String {
            switch self {
            case .addresses(let addresses): addresses.map(\.description).joined(separator: " ")
            case .nameNotFound: "NXDOMAIN"
            case .noData: "no address"
            case .failed(let code, _): "no answer (\(code))"
            }
        }

        /// Compared as sets: the order of addresses says nothing.
        func agrees(with other: Result) -> Bool {
            switch (self, other) {
            case (.addresses(let a), .addresses(let b)): Set(a) == Set(b)
            default: self == other
            }
        }
    }

    struct Answer: Sendable {
        /// The service's URL or the DNS server's address.
        var source: String
        var trusted: Bool
        var result: Result
        /// The guard's verdict on a DNS server's answer; nil for a service's, or no answer.
        var verdict: HijackVerdict? = nil
    }

    struct Probe: Sendable {
        var host: String
        var answers: [Answer]
        /// Whether every source that answered gave the same answer.
        var agree: Bool
        /// The worst verdict over the DNS servers' answers, judged against the first service that answered.
        var verdict: HijackVerdict
        /// The DNS server the verdict is about, when it is not `ok`.
        var verdictSource: String?
    }

    enum Status: String, Sendable {
        case healthy
        case degraded
        case unreachable

        var exitCode: Int32 {
            switch self {
            case .healthy: ExitStatus.success
            case .degraded: ExitStatus.negative
            case .unreachable: ExitStatus.unreachable
            }
        }
    }

    var services: [Service]
    var dnsServers: [DNSServer]
    var probes: [Probe]
    var durationMs: Double
    var expiryWarningDays: Int

    /// Nothing reachable: unreachable. Anything unreachable, a certificate not accepted or close to expiry, plain
    /// HTTP, or a hijack suspected: degraded. Else healthy.
    var status: Status {
        let sources = services.count + dnsServers.count
        let reachable = services.filter(\.reachable).count + dnsServers.filter(\.reachable).count
        if sources > 0, reachable == 0 { return .unreachable }
        return reasons.isEmpty ? .healthy : .degraded
    }

    /// What makes the status less than healthy, one line each.
    var reasons: [String] {
        var reasons: [String] = []
        for service in services {
            if !service.reachable {
                reasons.append("\(service.url) is unreachable: \(service.error ?? "no answer")")
                continue
            }
            if service.isPlainHTTP { reasons.append("\(service.url) is plain HTTP: its answers can be read and changed on the way") }
            if let certificate = service.certificate {
                if !certificate.valid {
                    reasons.append("the certificate of \(service.url) is not accepted: \(certificate.problem ?? "unknown")")
                } else if let days = certificate.daysLeft, days < expiryWarningDays {
                    reasons.append("the certificate of \(service.url) expires in \(days) days")
                }
            }
        }
        for server in dnsServers where !server.reachable {
            reasons.append("\(server.address) is unreachable: \(server.error ?? "no answer")")
        }
        for probe in probes {
            for answer in probe.answers {
                guard let verdict = answer.verdict, verdict.level != .ok else { continue }
                reasons.append("hijack \(verdict.level == .hijacked ? "detected" : "suspected") for \(probe.host) at \(answer.source): \(verdict.reason)")
            }
        }
        return reasons
    }

    var summary: String {
        let counts = "\(count(services.count, "service")), \(count(dnsServers.count, "DNS server")), \(count(probes.count, "probe name"))"
        let verdicts = probes.filter { $0.verdict.level != .ok }
        switch status {
        case .healthy:
            return "healthy: \(counts); every source reachable, no hijack suspected (\(format(durationMs)) ms)"
        case .unreachable:
            return "unreachable: none of \(counts.split(separator: ",").prefix(2).joined(separator: " and")) answered (\(format(durationMs)) ms)"
        case .degraded:
            let first = reasons.first ?? ""
            let more = reasons.count > 1 ? " (and \(reasons.count - 1) more)" : ""
            let hijack = verdicts.isEmpty ? "" : "; hijack suspected for \(count(verdicts.count, "name"))"
            return "degraded: \(first)\(more)\(hijack) (\(format(durationMs)) ms)"
        }
    }

    private func count(_ number: Int, _ noun: String) -> String { "\(number) \(noun)\(number == 1 ? "" : "s")" }

    // MARK: JSON

    var json: JSON {
        .object([
            ("status", .string(status.rawValue)),
            ("summary", .string(summary)),
            ("reasons", .array(reasons.map(JSON.string))),
            ("services", .array(services.map(Self.json))),
            ("dnsServers", .array(dnsServers.map(Self.json))),
            ("hosts", .array(probes.map(Self.json))),
            ("durationMs", .number(rounded(durationMs))),
        ])
    }

    private static func json(_ service: Service) -> JSON {
        var members: [(String, JSON)] = [
            ("url", .string(service.url)),
            ("transport", .string(service.transport.rawValue)),
            ("reachable", .bool(service.reachable)),
            ("latencyMs", service.latencyMs.map { .number(rounded($0)) } ?? .null),
        ]
        if let certificate = service.certificate {
            var fields: [(String, JSON)] = [("valid", .bool(certificate.valid)), ("daysLeft", certificate.daysLeft.map { .integer($0) } ?? .null)]
            if let problem = certificate.problem { fields.append(("problem", .string(problem))) }
            members.append(("certificate", .object(fields)))
        } else {
            members.append(("certificate", .null))
        }
        if let error = service.error { members.append(("error", .string(error))) }
        return .object(members)
    }

    private static func json(_ server: DNSServer) -> JSON {
        var members: [(String, JSON)] = [
            ("address", .string(server.address)),
            ("reachable", .bool(server.reachable)),
            ("latencyMs", server.latencyMs.map { .number(rounded($0)) } ?? .null),
        ]
        if let error = server.error { members.append(("error", .string(error))) }
        return .object(members)
    }

    private static func json(_ probe: Probe) -> JSON {
        var verdict: [(String, JSON)] = [("level", .string(probe.verdict.level.rawValue)), ("reason", .string(probe.verdict.reason.description))]
        if let source = probe.verdictSource { verdict.append(("source", .string(source))) }
        return .object([
            ("host", .string(probe.host)),
            ("answers", .array(probe.answers.map(json))),
            ("agree", .bool(probe.agree)),
            ("verdict", .object(verdict)),
        ])
    }

    private static func json(_ answer: Answer) -> JSON {
        var members: [(String, JSON)] = [("source", .string(answer.source)), ("trusted", .bool(answer.trusted))]
        switch answer.result {
        case .addresses(let addresses):
            members += [("result", .string("addresses")), ("addresses", .array(addresses.map { .string($0.description) }))]
        case .nameNotFound: members += [("result", .string("nxdomain")), ("addresses", .array([]))]
        case .noData: members += [("result", .string("nodata")), ("addresses", .array([]))]
        case .failed(let code, let message):
            members += [("result", .string("error")), ("addresses", .array([])), ("error", .object([("code", .string(code)), ("message", .string(message))]))]
        }
        if let verdict = answer.verdict {
            members.append(("verdict", .object([("level", .string(verdict.level.rawValue)), ("reason", .string(verdict.reason.description))])))
        }
        return .object(members)
    }

    // MARK: Text

    /// The tables, then the summary line; `colour` only on a terminal.
    func text(colour: Bool) -> String {
        let paint = Paint(enabled: colour)
        var lines: [String] = []
        if !services.isEmpty {
            var rows = [["SERVICE", "REACHABLE", "LATENCY", "CERTIFICATE"].map { Cell($0) }]
            for service in services {
                rows.append([
                    Cell(service.url),
                    service.reachable ? Cell("yes", .good) : Cell("no", .bad),
                    Cell(service.latencyMs.map { "\(format($0)) ms" } ?? "-"),
                    certificateCell(service),
                ])
            }
            lines += table(rows, paint)
            lines.append("")
        }
        if !dnsServers.isEmpty {
            var rows = [["DNS SERVER", "REACHABLE", "LATENCY"].map { Cell($0) }]
            for server in dnsServers {
                rows.append([
                    Cell(server.address),
                    server.reachable ? Cell("yes", .good) : Cell("no", .bad),
                    Cell(server.latencyMs.map { "\(format($0)) ms" } ?? "-"),
                ])
            }
            lines += table(rows, paint)
            lines.append("")
        }
        if !probes.isEmpty {
            let sources = probes[0].answers.map(\.source)
            var rows = [(["HOST"] + sources + ["AGREE", "VERDICT"]).map { Cell($0) }]
            for probe in probes {
                var row = [Cell(probe.host)]
                for answer in probe.answers { row.append(Cell(answer.result.description, answer.result.answered ? .plain : .bad)) }
                row.append(probe.agree ? Cell("yes") : Cell("no", .warning))
                switch probe.verdict.level {
                case .ok: row.append(Cell("ok", .good))
                default: row.append(Cell("\(probe.verdict) (\(probe.verdictSource ?? "?"))", probe.verdict.level == .hijacked ? .bad : .warning))
                }
                rows.append(row)
            }
            lines += table(rows, paint)
            lines.append("")
        }
        let tone: Tone = status == .healthy ? .good : status == .degraded ? .warning : .bad
        lines.append(paint(summary, tone))
        return lines.joined(separator: "\n")
    }

    private func certificateCell(_ service: Service) -> Cell {
        guard let certificate = service.certificate else { return Cell(service.isPlainHTTP ? "none (plain HTTP)" : "-", service.isPlainHTTP ? .warning : .plain) }
        guard certificate.valid else { return Cell("not accepted: \(certificate.problem ?? "unknown")", .bad) }
        guard let days = certificate.daysLeft else { return Cell("valid", .good) }
        return Cell("valid, \(days) days left", days < expiryWarningDays ? .warning : .good)
    }

    /// Rows as columns two spaces apart, each as wide as its widest cell; the paint goes around the padded text.
    private func table(_ rows: [[Cell]], _ paint: Paint) -> [String] {
        var widths: [Int] = []
        for row in rows {
            for (index, cell) in row.enumerated() {
                if index == widths.count { widths.append(0) }
                widths[index] = max(widths[index], cell.text.count)
            }
        }
        return rows.map { row in
            var line = ""
            for (index, cell) in row.enumerated() {
                let last = index == row.count - 1
                let padded = last ? cell.text : cell.text + String(repeating: " ", count: widths[index] - cell.text.count + 2)
                line += paint(padded, cell.tone)
            }
            return line
        }
    }

    // MARK: Changes

    /// What differs from `earlier`, one line each: for `--watch`.
    func changes(since earlier: HealthReport) -> [String] {
        var changes: [String] = []
        if earlier.status != status { changes.append("status: \(earlier.status.rawValue) → \(status.rawValue)") }
        let services = Dictionary(earlier.services.map { ($0.url, $0) }, uniquingKeysWith: { first, _ in first })
        for service in self.services {
            guard let before = services[service.url] else { continue }
            if before.reachable != service.reachable {
                changes.append("\(service.url): \(before.reachable ? "reachable" : "unreachable") → \(service.reachable ? "reachable" : "unreachable")")
            }
            if before.certificate != service.certificate {
                changes.append("\(service.url): certificate \(certificateCell(before).text) → \(certificateCell(service).text)")
            }
        }
        let servers = Dictionary(earlier.dnsServers.map { ($0.address, $0) }, uniquingKeysWith: { first, _ in first })
        for server in dnsServers {
            guard let before = servers[server.address], before.reachable != server.reachable else { continue }
            changes.append("\(server.address): \(before.reachable ? "reachable" : "unreachable") → \(server.reachable ? "reachable" : "unreachable")")
        }
        let probes = Dictionary(earlier.probes.map { ($0.host, $0) }, uniquingKeysWith: { first, _ in first })
        for probe in self.probes {
            guard let before = probes[probe.host] else { continue }
            for answer in probe.answers {
                guard let old = before.answers.first(where: { $0.source == answer.source }), !old.result.agrees(with: answer.result) else { continue }
                changes.append("\(probe.host) at \(answer.source): \(old.result) → \(answer.result)")
            }
            if before.verdict != probe.verdict {
                changes.append("\(probe.host): verdict \(before.verdict) → \(probe.verdict)")
            }
        }
        return changes
    }
}

enum Tone {
    case plain
    case good
    case warning
    case bad
}

private struct Cell {
    let text: String
    let tone: Tone

    init(_ text: String, _ tone: Tone = .plain) {
        self.text = text
        self.tone = tone
    }
}

/// ANSI colours, or none.
struct Paint {
    let enabled: Bool

    func callAsFunction(_ text: String, _ tone: Tone) -> String {
        guard enabled else { return text }
        let code: String
        switch tone {
        case .plain: return text
        case .good: code = "32"
        case .warning: code = "33"
        case .bad: code = "31"
        }
        return "\u{1B}[\(code)m\(text)\u{1B}[0m"
    }
}

private func rounded(_ value: Double) -> Double { (value * 1000).rounded() / 1000 }

private func format(_ milliseconds: Double) -> String { String(format3: milliseconds) }
