// swift-tools-version: 6.2
// An HTTP service on Hummingbird 2 whose answers come from settings that change while it runs:
// a package of its own, so neither the library nor DefaultsServices depends on Hummingbird.
// Run: `swift run greeter-service --port 8080 [--etcd etcd://127.0.0.1:2379/config/greeter/]`;
// test: `swift test` here (the etcd test needs Debian's etcd-server).
import PackageDescription

let package = Package(
    name: "greeter-service",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Defaults", path: "../.."),
        .package(name: "DefaultsServices", path: "../../Integrations/DefaultsServices"),
        .package(name: "DefaultsEtcd", path: "../../Integrations/DefaultsEtcd"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        .executableTarget(
            name: "greeter-service",
            dependencies: [
                .product(name: "Defaults", package: "Defaults"),
                .product(name: "DefaultsObservation", package: "Defaults"),
                .product(name: "DefaultsServices", package: "DefaultsServices"),
                .product(name: "DefaultsEtcd", package: "DefaultsEtcd"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .testTarget(
            name: "GreeterServiceTests",
            dependencies: [
                "greeter-service",
                .product(name: "defaults", package: "Defaults"),
            ]
        ),
    ]
)
