// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "swift-httpdns",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "HTTPDNSCore", targets: ["HTTPDNSCore"]),
        .library(name: "HTTPDNSCAres", targets: ["HTTPDNSCAres"]),
        .executable(name: "httpdns", targets: ["httpdns"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
    ],
    targets: [
        // The C API of libc-ares-dev; imported only by HTTPDNSCAres.
        .systemLibrary(
            name: "CAres",
            pkgConfig: "libcares",
            providers: [.apt(["libc-ares-dev"])]
        ),
        .target(
            name: "HTTPDNSCore",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        .target(
            name: "HTTPDNSCAres",
            dependencies: [
                "CAres",
                "HTTPDNSCore",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "httpdns",
            dependencies: [
                "HTTPDNSCore",
                "HTTPDNSCAres",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .testTarget(
            name: "HTTPDNSCoreTests",
            dependencies: [
                "HTTPDNSCore",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]
        ),
        .testTarget(
            name: "HTTPDNSCAresTests",
            dependencies: ["HTTPDNSCAres", "HTTPDNSCore"]
        ),
        .testTarget(
            name: "HTTPDNSIntegrationTests",
            dependencies: ["HTTPDNSCAres", "HTTPDNSCore"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
