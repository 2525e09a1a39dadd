// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Defaults",
    products: [
        .library(name: "Defaults", targets: ["Defaults"]),
        .library(name: "DefaultsObservation", targets: ["DefaultsObservation"]),
        // So code written for sindresorhus/Defaults can keep its `import DefaultsMacros`.
        .library(name: "DefaultsMacros", targets: ["DefaultsMacros"]),
        // Checks a backend of one's own against the protocol's guarantees, from any test framework.
        .library(name: "DefaultsBackendTesting", targets: ["DefaultsBackendTesting"]),
        // The `defaults` command as a library, for a build of it that knows suites kept elsewhere
        // (DefaultsEtcd's knows `etcd://` suites) while this package keeps no dependencies.
        .library(name: "DefaultsCommandLine", targets: ["DefaultsCommandLine"]),
        .executable(name: "defaults", targets: ["DefaultsTool"]),
    ],
    targets: [
        .target(name: "Defaults"),
        .target(name: "DefaultsObservation", dependencies: ["Defaults"]),
        .target(name: "DefaultsMacros", dependencies: ["DefaultsObservation"]),
        .target(name: "DefaultsBackendTesting", dependencies: ["Defaults"]),
        // The `defaults` command.
        .target(name: "DefaultsCommandLine", dependencies: ["Defaults", "DefaultsObservation"]),
        .executableTarget(name: "DefaultsTool", dependencies: ["DefaultsCommandLine"]),
        .executableTarget(
            name: "settings-basics",
            dependencies: ["Defaults"],
            path: "Examples/settings-basics"
        ),
        .executableTarget(
            name: "model-classes",
            dependencies: ["DefaultsObservation"],
            path: "Examples/model-classes"
        ),
        .executableTarget(
            name: "observable-viewmodel",
            dependencies: ["DefaultsObservation"],
            path: "Examples/observable-viewmodel"
        ),
        .executableTarget(
            name: "service-reload",
            dependencies: ["DefaultsObservation"],
            path: "Examples/service-reload"
        ),
        // Values of every kind, for the launch-override tests and the helper that reads them, and
        // the migrations the migration tests and the helper share.
        .target(
            name: "DefaultsLaunchOverrideSamples",
            dependencies: ["Defaults"],
            path: "Tests/Samples"
        ),
        // Other processes for the tests: writers, crashing writers, a watcher that polls.
        .executableTarget(
            name: "defaults-test-helper",
            dependencies: ["Defaults", "DefaultsLaunchOverrideSamples"],
            path: "Tests/Helpers/defaults-test-helper"
        ),
        // sindresorhus/Defaults' README examples that mean something on Linux, as its users wrote
        // them: a change that breaks one fails the build (see Tests/ReadmeExamples/README.md).
        .executableTarget(
            name: "readme-examples",
            dependencies: ["Defaults", "DefaultsObservation", "DefaultsMacros"],
            path: "Tests/ReadmeExamples",
            exclude: ["README.md"]
        ),
        // A libFuzzer target over the file's load path: scripts/fuzz builds it with the fuzzer.
        .executableTarget(
            name: "defaults-fuzz",
            dependencies: ["Defaults"],
            path: "Tests/Fuzz/defaults-fuzz"
        ),
        // What the test targets share: running the helper, waiting for events, a manual clock.
        .target(
            name: "DefaultsTestSupport",
            dependencies: ["Defaults"],
            path: "Tests/Support"
        ),
        .testTarget(
            name: "DefaultsTests",
            dependencies: [
                "Defaults", "DefaultsBackendTesting", "DefaultsTestSupport", "DefaultsLaunchOverrideSamples",
                "defaults-test-helper",
            ]
        ),
        .testTarget(
            name: "DefaultsObservationTests",
            dependencies: ["DefaultsObservation", "DefaultsTestSupport", "defaults-test-helper"]
        ),
        // A backend written as a user would, against the public API only, and the conformance checks
        // (its tests hold the suite's timed commits back with a package test hook).
        .testTarget(
            name: "DefaultsBackendTests",
            dependencies: ["DefaultsObservation", "DefaultsBackendTesting", "DefaultsTestSupport"]
        ),
        // Runs the `defaults` command end to end, and programs started with launch overrides.
        .testTarget(
            name: "DefaultsToolTests",
            dependencies: [
                "DefaultsTool", "Defaults", "DefaultsTestSupport", "DefaultsLaunchOverrideSamples",
                "defaults-test-helper",
            ]
        ),
        // Runs every example's binary and checks the lines that matter, so examples cannot rot.
        .testTarget(
            name: "ExamplesTests",
            dependencies: [
                "settings-basics", "model-classes", "observable-viewmodel", "service-reload", "readme-examples",
                "DefaultsTestSupport",
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
