import Defaults

/// The suite's own migrations of the "new version" the migration tests open an old file with:
/// shared by the test helper's `new-version` and the tests in this process.
package enum MigrationSamples {
    /// `windowSize` ([width, height]) split into `window.width` and `window.height`.
    package static let windowSplit = Defaults.Migration("3: window size split in two") { values in
        guard let size = try values.value(named: "windowSize", as: [Int].self), size.count == 2 else { return }
        try values.setValue(size[0], named: "window.width", keepingStored: true)
        try values.setValue(size[1], named: "window.height", keepingStored: true)
        values.removeValue(named: "windowSize")
    }

    /// `firstName` and `lastName` merged into `fullName`.
    package static let oneName = Defaults.Migration("4: one name") { values in
        let first = try values.value(named: "firstName", as: String.self)
        let last = try values.value(named: "lastName", as: String.self)
        guard first != nil || last != nil else { return }
        let full = [first, last].compactMap { $0 }.joined(separator: " ")
        try values.setValue(full, named: "fullName", keepingStored: true)
        values.removeValue(named: "firstName")
        values.removeValue(named: "lastName")
    }
}
