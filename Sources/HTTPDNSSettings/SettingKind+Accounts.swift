import FoundationEssentials
import HTTPDNSCore
import HTTPDNSWire

/// The accounts object: `{"<account>": {"secret": "…", "requireSignature": true, "allowMD5Signature": false}, …}`.
/// It is checked as strictly as every other setting, and handed on as compact JSON of the checked entries.
extension SettingKind {
    /// One account as read.
    public struct Account: Sendable, Hashable {
        public let secret: String
        public let requireSignature: Bool
        public let allowMD5Signature: Bool
    }

    static let accountKeys = ["secret", "requireSignature", "allowMD5Signature"]

    static func accountsFile(_ path: String, from origin: SettingOrigin) throws(SettingError) -> [UInt8] {
        guard !path.isEmpty else { throw SettingError(origin, "must name a JSON file of accounts") }
        let bytes: [UInt8]
        do {
            bytes = try BoundedFile.read(path, maxBytes: SettingsReader.maxFileBytes)
        } catch {
            throw SettingError(.unreadableFile, origin, "cannot read accounts from \(path) (a JSON object of accounts): \(error)", cause: error)
        }
        let value: JSONValue
        do {
            value = try JSONValue(parsing: bytes)
        } catch {
            // Where, not what: the file holds secrets.
            throw SettingError(origin, "cannot read accounts from \(path): \(error.redactedDescription)")
        }
        guard case .object(let object) = value else {
            throw SettingError(origin, "(\(path)) must be an object of accounts, not \(value.kind)")
        }
        return try accounts(object, from: SettingOrigin("\(origin) (\(path))"))
    }

    static func accounts(_ table: JSONObject, from origin: SettingOrigin) throws(SettingError) -> [UInt8] {
        var members: [(String, JSON)] = []
        for (id, entry) in table.members {
            guard case .object(let fields) = entry, case .string(let secret)? = fields["secret"], !secret.isEmpty else {
                throw SettingError("\(origin): account '\(id)' needs a non-empty \"secret\"")
            }
            if let unknown = fields.names.first(where: { !accountKeys.contains($0) }) {
                throw SettingError("\(origin): account '\(id)' has an unknown key '\(unknown)' (known: \(accountKeys.joined(separator: ", ")))")
            }
            func flag(_ key: String, default value: Bool) throws(SettingError) -> Bool {
                switch fields[key] {
                case nil: return value
                case .bool(let flag)?: return flag
                case let other?: throw SettingError("\(origin): account '\(id)' key '\(key)' must be true or false, not \(other.kind)")
                }
            }
            members.append(
                (
                    id,
                    .object([
                        ("secret", .string(secret)),
                        ("requireSignature", .bool(try flag("requireSignature", default: true))),
                        ("allowMD5Signature", .bool(try flag("allowMD5Signature", default: false))),
                    ])
                )
            )
        }
        return Array(JSON.object(members).text.utf8)
    }

    /// The accounts from what ``accounts(_:from:)`` handed on.
    static func decodeAccounts(_ bytes: [UInt8]) -> [String: Account] {
        guard case .object(let table)? = try? JSONValue(parsing: bytes) else { return [:] }
        var accounts: [String: Account] = [:]
        for (id, entry) in table.members {
            guard case .object(let fields) = entry, case .string(let secret)? = fields["secret"] else { continue }
            accounts[id] = Account(
                secret: secret,
                requireSignature: fields["requireSignature"] == .bool(true),
                allowMD5Signature: fields["allowMD5Signature"] == .bool(true)
            )
        }
        return accounts
    }
}
