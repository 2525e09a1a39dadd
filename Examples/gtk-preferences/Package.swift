// swift-tools-version: 6.2
// A GTK 4 preferences window made from settings with DefaultsAdwaita. A package of its own, so the
// root package keeps no dependencies and builds where GTK is absent. Needs Debian's libgtk-4-dev
// and libadwaita-1-dev.
import PackageDescription

let package = Package(
    name: "gtk-preferences",
    dependencies: [
        .package(name: "Defaults", path: "../.."),
        .package(name: "DefaultsGtk", path: "../../Integrations/DefaultsGtk"),
    ],
    targets: [
        .executableTarget(
            name: "gtk-preferences",
            dependencies: [
                .product(name: "DefaultsGtk", package: "DefaultsGtk"),
                .product(name: "DefaultsAdwaita", package: "DefaultsGtk"),
                .product(name: "DefaultsObservation", package: "Defaults"),
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
