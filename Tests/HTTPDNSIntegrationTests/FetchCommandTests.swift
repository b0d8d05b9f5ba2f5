import Foundation
import HTTPDNSTesting
import Testing

/// `httpdns fetch --dry-run` as a process: the canonical request as it would be sent, resolving and sending nothing.
@Suite("httpdns fetch --dry-run, the built executable")
struct FetchCommandTests {
    func fetch(_ arguments: String...) async throws -> ChildProcess.Completion {
        try await ChildProcess.run(executable: try ServiceProcess.executablePath(), arguments: ["fetch"] + arguments)
    }

    @Test func printsTheCanonicalRequestWithItsHostHeaderAndDefaults() async throws {
        let run = try await fetch("HTTP://WWW.Example.COM:80/a/./b/../c?x=%7e#top", "--dry-run")
        #expect(run.status == .exited(0), "\(run)")
        #expect(run.stdout == "GET http://www.example.com:80/a/c?x=~\nHost: www.example.com\nAccept: */*\nAccept-Encoding: gzip, deflate\n")
    }

    @Test func jsonHasTheMethodTheURLAndTheHeadersAsSent() async throws {
        let run = try await fetch("https://API.example/x", "--dry-run", "--json", "-d", "a=1", "-H", "accept: text/html", "-H", "X-Tag: 1", "-H", "x-tag: 2", "--compat", "apple")
        #expect(run.status == .exited(0), "\(run)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run)")
        #expect(object["method"] as? String == "POST", "-d makes a POST")
        #expect(object["url"] as? String == "https://api.example/x")
        #expect(
            object["headers"] as? [String: String] == [
                "Host": "api.example", "accept": "text/html", "X-Tag": "1, 2", "Accept-Encoding": "gzip, deflate",
                "Accept-Language": "en-us", "Content-Type": "application/x-www-form-urlencoded",
            ]
        )
        #expect(Set(object.keys) == ["method", "url", "headers"])
    }

    @Test(arguments: [
        (["ftp://a.example/", "--dry-run"], "is not an http or https URL"),
        (["http://a b/", "--dry-run"], "a space or control character"),
        (["http:///x", "--dry-run"], "the host is empty"),
        (["http://a.example/", "--dry-run", "-H", "no colon"], "-H takes 'Name: value'"),
        (["http://a.example/", "--dry-run", "--compat", "ios"], "--compat takes apple"),
        (["http://a.example/"], "sending requests is not built yet"),
    ])
    func badInputExits2SayingWhy(_ arguments: [String], _ fragment: String) async throws {
        let run = try await ChildProcess.run(executable: try ServiceProcess.executablePath(), arguments: ["fetch"] + arguments)
        #expect(run.status == .exited(2), "\(run)")
        #expect(run.stderr.contains(fragment), "\(run)")
        #expect(run.stdout.isEmpty)
    }
}
