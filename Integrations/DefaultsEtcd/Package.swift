// swift-tools-version: 6.2
// Suites whose settings live in etcd, shared by every instance of a service. A package of its own,
// so the root package keeps no dependencies. Test: `swift test --package-path Integrations/DefaultsEtcd`
// (needs the `etcd` server on the PATH: Debian's `etcd-server`).
import PackageDescription

let package = Package(
    name: "DefaultsEtcd",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "DefaultsEtcd", targets: ["DefaultsEtcd"]),
        // The root package's `defaults` command, knowing `etcd://` suites too: a superset of it,
        // to install as `defaults`. NB: not named so here, since the root's product has that name
        // and the two would be built to one path.
        .executable(name: "defaults-etcd", targets: ["DefaultsEtcdTool"]),
        // The example service (Examples/etcd-service): a product, so another package can build it.
        .executable(name: "etcd-service", targets: ["etcd-service"]),
    ],
    dependencies: [
        .package(name: "Defaults", path: "../.."),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        // Only for the tests: swift-configuration's reader over an etcd suite.
        .package(name: "DefaultsConfiguration", path: "../DefaultsConfiguration"),
        .package(url: "https://github.com/apple/swift-configuration", from: "1.4.0"),
    ],
    targets: [
        .target(
            name: "DefaultsEtcd",
            dependencies: [
                .product(name: "Defaults", package: "Defaults"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .executableTarget(
            name: "DefaultsEtcdTool",
            dependencies: [
                "DefaultsEtcd",
                .product(name: "Defaults", package: "Defaults"),
                .product(name: "DefaultsCommandLine", package: "Defaults"),
            ]
        ),
        // A service that follows its settings in etcd (see its header for how to run it).
        .executableTarget(
            name: "etcd-service",
            dependencies: [
                "DefaultsEtcd",
                .product(name: "Defaults", package: "Defaults"),
                .product(name: "DefaultsObservation", package: "Defaults"),
            ],
            path: "Examples/etcd-service"
        ),
        // Another process of the tests: increments a key in exclusive transactions, or writes keys.
        .executableTarget(
            name: "etcd-test-helper",
            dependencies: ["DefaultsEtcd", .product(name: "Defaults", package: "Defaults")]
        ),
        .testTarget(
            name: "DefaultsEtcdTests",
            dependencies: [
                "DefaultsEtcd",
                "etcd-test-helper",
                "etcd-service",
                "DefaultsEtcdTool",
                .product(name: "DefaultsObservation", package: "Defaults"),
                .product(name: "DefaultsBackendTesting", package: "Defaults"),
                .product(name: "DefaultsConfiguration", package: "DefaultsConfiguration"),
                .product(name: "Configuration", package: "swift-configuration"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
