// swift-tools-version: 6.1
// A GTK 4 preferences window bound to settings. A package of its own, so the root package keeps
// no dependencies and builds where GTK is absent. Needs Debian's libgtk-4-dev.
import PackageDescription

let package = Package(
    name: "gtk-preferences",
    dependencies: [.package(name: "Defaults", path: "../..")],
    targets: [
        // GTK 4's C API, found with pkg-config.
        .systemLibrary(
            name: "CGtk",
            pkgConfig: "gtk4",
            providers: [.apt(["libgtk-4-dev"])]
        ),
        .executableTarget(
            name: "gtk-preferences",
            dependencies: ["CGtk", .product(name: "DefaultsObservation", package: "Defaults")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
