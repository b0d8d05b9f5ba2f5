import HTTPDNSCore
import HTTPDNSWire
import Testing

/// The native API's answers as the service writes them and a client reads them, its errors and signatures.
@Suite struct NativeModelTests {
    static let answer = NativeAnswer(
        host: "api.example.test",
        ipv4: [IPv4Address("192.0.2.10")!, IPv4Address("192.0.2.11")!],
        ipv6: [IPv6Address("2001:db8::10")!],
        ttlSeconds: 57,
        originTTLSeconds: 60,
        stale: true
    )

    @Test func singleAnswerIsWrittenAsTheWireFormatSaysAndReadBack() throws {
        var bytes: [UInt8] = []
        Self.answer.writeJSON(into: &bytes)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(
            text
                == #"{"host":"api.example.test","ips":["192.0.2.10","192.0.2.11"],"ipsv6":["2001:db8::10"],"ttl":57,"origin_ttl":60,"stale":true}"#
        )
        #expect(try NativeAnswer(parsingJSON: bytes) == Self.answer)
    }

    @Test func aFamilyNotAskedIsAbsentNotEmpty() throws {
        let onlyV4 = NativeAnswer(host: "a.example", ipv4: [], ipv6: nil, ttlSeconds: 30, originTTLSeconds: 30)
        var bytes: [UInt8] = []
        onlyV4.writeJSON(into: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"host":"a.example","ips":[],"ttl":30,"origin_ttl":30}"#)
        let read = try NativeAnswer(parsingJSON: bytes)
        #expect(read.ipv4 == [] && read.ipv6 == nil && !read.stale)
    }

    @Test(arguments: [
        (#"{"host":"a","ips":["192.0.2.300"],"ttl":1,"origin_ttl":1}"#, "not an address"),
        (#"{"host":"a","ips":["2001:db8::1"],"ttl":1,"origin_ttl":1}"#, "not an address"),
        (#"{"host":"a","ipsv6":["192.0.2.1"],"ttl":1,"origin_ttl":1}"#, "not an address"),
        (#"{"host":"a","ips":[],"ttl":-1,"origin_ttl":1}"#, "whole number of seconds"),
        (#"{"host":"a","ips":[],"ttl":1.5,"origin_ttl":1}"#, "whole number of seconds"),
        (#"{"host":"a","ips":[],"ttl":"60","origin_ttl":1}"#, "whole number of seconds"),
        (#"{"host":"a","ips":[],"ttl":1}"#, "no \"origin_ttl\""),
        (#"{"ips":[],"ttl":1,"origin_ttl":1}"#, "no \"host\""),
        (#"{"host":"a","ips":"192.0.2.1","ttl":1,"origin_ttl":1}"#, "not an array"),
        (#"{"host":"a","ips":[],"ttl":1,"origin_ttl":1,"stale":"yes"}"#, "not a boolean"),
        (#"["a"]"#, "not an object"),
        (#"<html>"#, "not JSON"),
    ])
    func malformedSingleAnswersAreRejectedSayingWhy(text: String, reason: String) {
        let error = #expect(throws: NativeFormatError.self) { try NativeAnswer(parsingJSON: Array(text.utf8)) }
        #expect(error?.reason.contains(reason) == true, "\(error?.reason ?? "no error")")
    }

    @Test func batchAnswerRoundTrips() throws {
        let batch = NativeBatchAnswer(records: [
            .init(host: "a.example", family: .ipv4, addresses: [.v4(IPv4Address("192.0.2.1")!)], ttlSeconds: 31),
            .init(host: "a.example", family: .ipv6, addresses: [], ttlSeconds: 60, stale: true),
        ])
        #expect(
            batch.jsonText
                == #"{"dns":[{"host":"a.example","ips":["192.0.2.1"],"type":1,"ttl":31},{"host":"a.example","ips":[],"type":28,"ttl":60,"stale":true}]}"#
        )
        #expect(try NativeBatchAnswer(parsingJSON: Array(batch.jsonText.utf8)) == batch)
        let wrongFamily = #"{"dns":[{"host":"a","ips":["2001:db8::1"],"type":1,"ttl":1}]}"#
        #expect(throws: NativeFormatError.self) { try NativeBatchAnswer(parsingJSON: Array(wrongFamily.utf8)) }
        let noType = #"{"dns":[{"host":"a","ips":[],"ttl":1}]}"#
        #expect(throws: NativeFormatError.self) { try NativeBatchAnswer(parsingJSON: Array(noType.utf8)) }
    }

    @Test func errorBodiesCarryStableCodes() throws {
        let body = NativeErrorBody(code: .upstreamUnavailable, message: "no \"answer\"")
        #expect(body.jsonText == #"{"code":"UpstreamUnavailable","message":"no \"answer\""}"#)
        #expect(try NativeErrorBody(parsingJSON: Array(body.jsonText.utf8)) == body)
        #expect(NativeErrorCode.rateLimited.rawValue == "RateLimited")
    }

    /// Vectors computed with Python's hmac and hashlib.
    @Test func signaturesMatchIndependentVectors() {
        let hmac = RequestSignature.sign(host: "api.example.test", expiry: "1800000300", secret: "s3cret")
        #expect(hmac == "3cfb1a47faf356528d69de59bbbfbe2cec0953dca9383b93cab44068a4c48b81")
        let md5 = RequestSignature.sign(host: "api.example.test", expiry: "1800000300", secret: "s3cret", scheme: .md5)
        #expect(md5 == "bf25a1cc0fa0cc168ad0c8cc977d4ac1")
        #expect(RequestSignature.isValid(hmac, host: "api.example.test", expiry: "1800000300", secret: "s3cret", scheme: .hmacSHA256))
        #expect(!RequestSignature.isValid(hmac, host: "api.example.test", expiry: "1800000301", secret: "s3cret", scheme: .hmacSHA256))
        #expect(!RequestSignature.isValid(hmac.dropLast(), host: "api.example.test", expiry: "1800000300", secret: "s3cret", scheme: .hmacSHA256))
        #expect(!RequestSignature.isValid(md5, host: "api.example.test", expiry: "1800000300", secret: "s3cret", scheme: .hmacSHA256))
    }

    @Test func requestTargets() throws {
        let one = [try HostName("api.example.test")]
        #expect(NativeRequest(hosts: one).target(unixSeconds: 0) == "/d?host=api.example.test")
        let two = one + [try HostName("b.example.test")]
        #expect(NativeRequest(hosts: two, families: .all).target(unixSeconds: 0) == "/resolve?host=api.example.test,b.example.test&query=4,6")
        let open = NativeRequest.Account(id: "app", secret: nil)
        #expect(NativeRequest(hosts: one, families: .ipv6, account: open).target(unixSeconds: 0) == "/app/d?host=api.example.test&query=6")
        let signed = NativeRequest.Account(id: "app", secret: "s3cret", validity: .seconds(300))
        #expect(
            NativeRequest(hosts: one, account: signed).target(unixSeconds: 1_800_000_000)
                == "/app/sign_d?host=api.example.test&t=1800000300&s=3cfb1a47faf356528d69de59bbbfbe2cec0953dca9383b93cab44068a4c48b81"
        )
    }

    @Test func nativeQueryFamilies() {
        #expect(AddressFamilies(nativeQuery: nil) == .ipv4)
        #expect(AddressFamilies(nativeQuery: "6,4") == .all)
        #expect(AddressFamilies(nativeQuery: "6") == .ipv6)
        for bad: Substring in ["", "5", "4,", ",6", "4;6"] { #expect(AddressFamilies(nativeQuery: bad) == nil) }
        for families: AddressFamilies in [.ipv4, .ipv6, .all] { #expect(AddressFamilies(nativeQuery: families.nativeQueryValue[...]) == families) }
    }

    @Test func base64URLRoundTrips() {
        let vectors: [([UInt8], String)] = [([], ""), (Array("f".utf8), "Zg"), (Array("fo".utf8), "Zm8"), (Array("foo".utf8), "Zm9v"), ([0xFB, 0xFF, 0xFE], "-__-")]
        for (bytes, text) in vectors {
            #expect(Base64URL.encode(bytes) == text)
            #expect(Base64URL.decode(text[...]) == bytes)
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let bytes = (0..<Int.random(in: 0..<40, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(Base64URL.decode(Base64URL.encode(bytes)[...]) == bytes)
        }
    }
}
