// swift-tools-version: 6.2
// A swift-configuration provider backed by a Defaults suite. A package of its own, so the root
// package keeps no dependencies. Test: `swift test --package-path Integrations/DefaultsConfiguration`.
import PackageDescription

let package = Package(
    name: "DefaultsConfiguration",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "DefaultsConfiguration", targets: ["DefaultsConfiguration"])
    ],
    dependencies: [
        .package(name: "Defaults", path: "../.."),
        // "CommandLineArguments": the example service reads its command line through it.
        .package(
            url: "https://github.com/apple/swift-configuration",
            from: "1.4.0",
            traits: [.defaults, "CommandLineArguments"]
        ),
    ],
    targets: [
        .target(
            name: "DefaultsConfiguration",
            dependencies: [
                .product(name: "Defaults", package: "Defaults"),
                .product(name: "DefaultsObservation", package: "Defaults"),
                .product(name: "Configuration", package: "swift-configuration"),
            ],
            // NB: as in swift-configuration itself, whose provider protocol takes its handlers as
            // `nonisolated(nonsending)` closures.
            swiftSettings: [.enableUpcomingFeature("NonisolatedNonsendingByDefault")]
        ),
        // A service whose settings come from its command line, its environment and a suite.
        .executableTarget(
            name: "config-service",
            dependencies: [
                "DefaultsConfiguration",
                .product(name: "Configuration", package: "swift-configuration"),
            ],
            path: "Examples/config-service"
        ),
        .testTarget(
            name: "DefaultsConfigurationTests",
            dependencies: [
                "DefaultsConfiguration",
                "config-service",
                .product(name: "defaults", package: "Defaults"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "ConfigurationTesting", package: "swift-configuration"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
