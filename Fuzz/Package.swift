// swift-tools-version:6.2
import Foundation
import PackageDescription

// A path dependency's identity is its directory's name, which is the clone's: read it rather than assume it.
let parent = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent

// libFuzzer targets over the real parsers of swift-httpdns, one executable each, built by scripts/fuzz.sh with
// `-sanitize=fuzzer,address`. Each hands its function to libFuzzer's driver (FuzzDriver).
let package = Package(
    name: "swift-httpdns-fuzz",
    dependencies: [
        .package(path: "..", traits: ["Fuzzing"]),
        // The reference the differential HTTP/2 target holds the service's connection against; the same version the
        // package itself resolves.
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
    ],
    targets: [
        // Starts libFuzzer's driver from the executable's own main.
        .target(name: "FuzzDriver"),
        .executableTarget(name: "FuzzDNSMessage", dependencies: ["FuzzDriver", .product(name: "HTTPDNSWire", package: parent)]),
        .executableTarget(name: "FuzzNativeJSON", dependencies: ["FuzzDriver", .product(name: "HTTPDNSWire", package: parent)]),
        .executableTarget(name: "FuzzCacheControl", dependencies: ["FuzzDriver", .product(name: "HTTPDNSInterceptor", package: parent)]),
        .executableTarget(name: "FuzzCanonicalRequest", dependencies: ["FuzzDriver", .product(name: "HTTPDNSInterceptor", package: parent)]),
        .executableTarget(name: "FuzzHTTP1", dependencies: ["FuzzDriver", .product(name: "HTTPDNSServer", package: parent)]),
        .executableTarget(name: "FuzzQueryParameters", dependencies: ["FuzzDriver", .product(name: "HTTPDNSServer", package: parent)]),
        .executableTarget(name: "FuzzSettings", dependencies: ["FuzzDriver", .product(name: "HTTPDNSSettings", package: parent)]),
        .executableTarget(name: "FuzzHTTP2", dependencies: ["FuzzDriver", .product(name: "HTTPDNSServer", package: parent)]),
        .executableTarget(
            name: "FuzzHTTP2Differential",
            dependencies: [
                "FuzzDriver",
                .product(name: "HTTPDNSServer", package: parent),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]
        ),
    ]
)
