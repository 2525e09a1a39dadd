// swift-tools-version: 6.3
// Benchmarks for Defaults, kept out of the root package so the library stays dependency-free.
// Run: `Benchmarks/ratios` for the ratio table, or `swift package --disable-sandbox benchmark` here (README.md).
import PackageDescription

let package = Package(
    name: "DefaultsBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Defaults", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        // "Reloading": its polling file provider, compared with ours for outside changes.
        .package(url: "https://github.com/apple/swift-configuration", from: "1.4.0", traits: [.defaults, "Reloading"]),
        .package(url: "https://github.com/apple/swift-system", from: "1.5.0"),
        // NB: named here (and linked below, where "Reloading" links it anyway) only so SwiftPM
        // resolves it: swift-configuration needs it with "Reloading", and SwiftPM 6.3 leaves it
        // unresolved when another package of the graph (the side package below) depends on
        // swift-configuration without that trait.
        .package(url: "https://github.com/apple/swift-metrics", from: "2.7.0"),
        // The swift-configuration provider over a suite, compared with swift-configuration's own.
        .package(name: "DefaultsConfiguration", path: "../Integrations/DefaultsConfiguration"),
        // Suites in etcd, and async-http-client for the bare etcd watch they are compared with.
        .package(name: "DefaultsEtcd", path: "../Integrations/DefaultsEtcd"),
        // The live log level, against a log call at a fixed level.
        .package(name: "DefaultsServices", path: "../Integrations/DefaultsServices"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        .executableTarget(
            name: "DefaultsBenchmarks",
            dependencies: [
                .product(name: "Defaults", package: "Defaults"),
                .product(name: "DefaultsObservation", package: "Defaults"),
                .product(name: "DefaultsConfiguration", package: "DefaultsConfiguration"),
                "OutsideBackend",
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "DefaultsEtcd", package: "DefaultsEtcd"),
                .product(name: "DefaultsServices", package: "DefaultsServices"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Benchmarks/DefaultsBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [
                .plugin(name: "BenchmarkPlugin", package: "benchmark")
            ]
        ),
        // The other process of the cross-process benchmarks: writes the shared file through the library.
        .executableTarget(
            name: "defaults-bench-peer",
            dependencies: [
                .product(name: "Defaults", package: "Defaults"),
                .product(name: "DefaultsEtcd", package: "DefaultsEtcd"),
            ],
            path: "Sources/defaults-bench-peer",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // A backend written as a user would write one, against the library's public API only: the
        // reads over it are compared with reads over the file.
        .target(
            name: "OutsideBackend",
            dependencies: [.product(name: "Defaults", package: "Defaults")],
            path: "Sources/OutsideBackend",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The same scenarios as plain loops, for valgrind/callgrind (see README.md, "Profiling").
        .executableTarget(
            name: "defaults-profile",
            dependencies: [
                .product(name: "Defaults", package: "Defaults"),
                .product(name: "DefaultsObservation", package: "Defaults"),
                "OutsideBackend",
            ],
            path: "Sources/defaults-profile",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The soak (scripts/soak): threads, processes and a person at one file for minutes, then checks.
        .executableTarget(
            name: "defaults-soak",
            dependencies: [
                .product(name: "Defaults", package: "Defaults"),
                .product(name: "DefaultsObservation", package: "Defaults"),
            ],
            path: "Sources/defaults-soak",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
