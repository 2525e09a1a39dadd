// swift-tools-version: 6.2
// GTK 4 programs with settings: keys bound to widgets' properties, keys as actions, observers
// called on GLib's main loop, and the main actor run by it. A package of its own, so the root
// package keeps no dependencies and builds where GTK is absent. Needs Debian's libgtk-4-dev (and
// Xvfb for the tests, which start their own X server). Test:
// `swift test --package-path Integrations/DefaultsGtk`.
import PackageDescription

let package = Package(
    name: "DefaultsGtk",
    products: [
        .library(name: "DefaultsGtk", targets: ["DefaultsGtk"]),
        .library(name: "DefaultsAdwaita", targets: ["DefaultsAdwaita"]),
        .executable(name: "defaults-editor", targets: ["defaults-editor"]),
    ],
    dependencies: [
        .package(name: "Defaults", path: "../..")
    ],
    targets: [
        // GTK 4's C API (GLib with it), found with pkg-config.
        .systemLibrary(
            name: "CGtk",
            pkgConfig: "gtk4",
            providers: [.apt(["libgtk-4-dev"])]
        ),
        .target(
            name: "DefaultsGtk",
            dependencies: ["CGtk", .product(name: "DefaultsObservation", package: "Defaults")]
        ),
        // libadwaita's C API (GTK 4 with it): a module of its own, so DefaultsGtk alone needs no
        // libadwaita.
        .systemLibrary(
            name: "CAdw",
            pkgConfig: "libadwaita-1",
            providers: [.apt(["libadwaita-1-dev"])]
        ),
        // Preferences windows made from keys, with libadwaita's rows.
        .target(
            name: "DefaultsAdwaita",
            dependencies: ["CAdw", "DefaultsGtk", .product(name: "DefaultsObservation", package: "Defaults")]
        ),
        // The settings of any program, in a window made from the schema it published.
        .executableTarget(
            name: "defaults-editor",
            dependencies: [
                "DefaultsAdwaita", "DefaultsGtk", .product(name: "DefaultsObservation", package: "Defaults"),
            ]
        ),
        // A GTK program for the tests: runs GLib's main loop on its main thread and reports on
        // which thread each kind of observer was called, or runs a window of bound widgets.
        .executableTarget(
            name: "defaults-gtk-test-helper",
            dependencies: [
                "DefaultsGtk", "DefaultsAdwaita", .product(name: "DefaultsObservation", package: "Defaults"),
            ]
        ),
        .testTarget(
            name: "DefaultsGtkTests",
            dependencies: [
                "DefaultsGtk",
                "defaults-gtk-test-helper",
                "defaults-editor",
                .product(name: "defaults", package: "Defaults"),
                .product(name: "Defaults", package: "Defaults"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
