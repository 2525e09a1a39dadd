// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Defaults",
    products: [
        .library(name: "Defaults", targets: ["Defaults"]),
        .library(name: "DefaultsObservation", targets: ["DefaultsObservation"]),
    ],
    targets: [
        .target(name: "Defaults"),
        .target(name: "DefaultsObservation", dependencies: ["Defaults"]),
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
        // A second process for the tests: exit-time flushing and writes under a file-size limit.
        .executableTarget(
            name: "defaults-test-helper",
            dependencies: ["Defaults"],
            path: "Examples/defaults-test-helper"
        ),
        .testTarget(
            name: "DefaultsTests",
            dependencies: ["Defaults", "defaults-test-helper"]
        ),
        .testTarget(
            name: "DefaultsObservationTests",
            dependencies: ["DefaultsObservation"]
        ),
        // Runs every example's binary and checks the lines that matter, so examples cannot rot.
        .testTarget(
            name: "ExamplesTests",
            dependencies: ["settings-basics", "model-classes", "observable-viewmodel", "service-reload"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
