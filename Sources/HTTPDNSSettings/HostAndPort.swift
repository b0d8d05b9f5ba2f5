/// `HOST:PORT` or `[IPv6]:PORT`, as `listen` takes it.
public struct HostAndPort: Sendable, Hashable {
    public let host: String
    public let port: Int

    public init(_ text: String) throws(SettingError) {
        let invalid = SettingError("'\(text)' is not HOST:PORT (for IPv6, [ADDRESS]:PORT)")
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { throw invalid }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else { throw invalid }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        guard !host.isEmpty, let port = Int(portText), (0...65_535).contains(port) else { throw invalid }
        self.host = String(host)
        self.port = port
    }
}
