// swift-tools-version: 6.2
// Suites in a swift-server service: a `Service` for swift-service-lifecycle's `ServiceGroup`,
// problems in swift-log, counts in swift-metrics. A package of its own, so the root package keeps
// no dependencies. Test: `swift test --package-path Integrations/DefaultsServices`.
import PackageDescription

let package = Package(
    name: "DefaultsServices",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "DefaultsServices", targets: ["DefaultsServices"])
    ],
    dependencies: [
        .package(name: "Defaults", path: "../.."),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        .target(
            name: "DefaultsServices",
            dependencies: [
                .product(name: "Defaults", package: "Defaults"),
                .product(name: "DefaultsObservation", package: "Defaults"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "DefaultsServicesTests",
            dependencies: [
                "DefaultsServices",
                .product(name: "Defaults", package: "Defaults"),
                .product(name: "defaults", package: "Defaults"),
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
            ]
        ),
    ]
)
