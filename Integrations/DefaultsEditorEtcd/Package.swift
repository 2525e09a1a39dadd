// swift-tools-version: 6.2
// `defaults-editor-etcd`: DefaultsGtk's `defaults-editor` knowing suites in etcd too (`etcd://` and
// `etcds://` addresses, as the `defaults-etcd` command opens them). A package of its own, so that
// neither DefaultsGtk needs etcd's HTTP client nor DefaultsEtcd needs GTK. Needs Debian's
// libadwaita-1-dev; the tests also need `etcd` (etcd-server) and Xvfb (xvfb). Test:
// `swift test --package-path Integrations/DefaultsEditorEtcd`.
import PackageDescription

let package = Package(
    name: "DefaultsEditorEtcd",
    products: [
        .executable(name: "defaults-editor-etcd", targets: ["defaults-editor-etcd"])
    ],
    dependencies: [
        .package(name: "Defaults", path: "../.."),
        .package(name: "DefaultsGtk", path: "../DefaultsGtk"),
        .package(name: "DefaultsEtcd", path: "../DefaultsEtcd"),
    ],
    targets: [
        .executableTarget(
            name: "defaults-editor-etcd",
            dependencies: [
                .product(name: "DefaultsAdwaita", package: "DefaultsGtk"),
                .product(name: "DefaultsEtcd", package: "DefaultsEtcd"),
            ]
        ),
        // The editor's window on a suite in etcd, read back through GTK for the tests.
        .executableTarget(
            name: "editor-etcd-test-helper",
            dependencies: [
                .product(name: "DefaultsAdwaita", package: "DefaultsGtk"),
                .product(name: "DefaultsGtk", package: "DefaultsGtk"),
                .product(name: "DefaultsEtcd", package: "DefaultsEtcd"),
                .product(name: "DefaultsObservation", package: "Defaults"),
            ]
        ),
        .testTarget(
            name: "DefaultsEditorEtcdTests",
            dependencies: [
                "defaults-editor-etcd",
                "editor-etcd-test-helper",
                .product(name: "Defaults", package: "Defaults"),
                .product(name: "DefaultsEtcd", package: "DefaultsEtcd"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
