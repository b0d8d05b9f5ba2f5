import HummingbirdCore

/// A request's query parameters as the routes read them: the first value given for a name.
protocol QueryParameters {
    func first(_ name: String) -> Substring?
}

extension FlatDictionary: QueryParameters where Key == Substring, Value == Substring {
    func first(_ name: String) -> Substring? { self[name[...]] }
}

/// A request target split into its path and query without allocating, for the cache-hit paths, which would
/// otherwise spend more on Hummingbird's `URI` than on the answer. Only targets that `URI` reads the same way are
/// taken: origin-form, with a query free of percent-encoding (whose values `URI` would decode). For any other,
/// `init` fails and the caller parses a `URI`.
struct PlainTarget: QueryParameters {
    let path: Substring
    let query: Substring

    init?(_ target: String) {
        var target = target
        // As URI: the path runs to the first "?", the query from there to the first "#".
        let split = target.withUTF8 { bytes -> (pathEnd: Int, queryEnd: Int)? in
            guard bytes.first == UInt8(ascii: "/") else { return nil }
            guard let mark = bytes.firstIndex(of: UInt8(ascii: "?")) else { return (bytes.count, bytes.count) }
            var end = bytes.count
            for index in (mark + 1)..<bytes.count {
                if bytes[index] == UInt8(ascii: "#") {
                    end = index
                    break
                }
                if bytes[index] == UInt8(ascii: "%") { return nil }
            }
            return (mark, end)
        }
        guard let split else { return nil }
        let utf8 = target.utf8
        let pathEnd = utf8.index(utf8.startIndex, offsetBy: split.pathEnd)
        path = target[..<pathEnd]
        query = split.pathEnd == split.queryEnd ? "" : target[utf8.index(after: pathEnd)..<utf8.index(utf8.startIndex, offsetBy: split.queryEnd)]
    }

    /// The value of the first `name=value` pair (empty for a bare `name`), or nil.
    func first(_ name: String) -> Substring? {
        var query = self.query
        let found = query.withUTF8 { query -> Range<Int>? in
            let name = name.utf8
            var start = 0
            while start < query.count {
                var end = start
                var equals: Int?
                while end < query.count, query[end] != UInt8(ascii: "&") {
                    if equals == nil, query[end] == UInt8(ascii: "=") { equals = end }
                    end += 1
                }
                if UnsafeBufferPointer(rebasing: query[start..<(equals ?? end)]).elementsEqual(name) {
                    return equals.map { ($0 + 1)..<end } ?? end..<end
                }
                start = end + 1
            }
            return nil
        }
        guard let found else { return nil }
        let utf8 = query.utf8
        return query[utf8.index(utf8.startIndex, offsetBy: found.lowerBound)..<utf8.index(utf8.startIndex, offsetBy: found.upperBound)]
    }
}
