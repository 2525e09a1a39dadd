import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A directory laid out, and updated, the way kubelet lays out and updates a ConfigMap or Secret
/// volume.
///
/// ```
/// settings.json -> ..data/settings.json
/// ..data -> ..2026_11_24_10_00_00.1234
/// ..2026_11_24_10_00_00.1234/settings.json
/// ```
///
/// An update writes a new timestamped directory, makes `..data_tmp` point at it, renames
/// `..data_tmp` over `..data` (the one atomic step), and then deletes the old directory. The
/// per-file links are made once and never change.
package struct ConfigMapVolume {
    /// The volume's mount point.
    package let directory: URL
    private var current: String
    private var updates = 0

    /// Lays out a volume holding `files` (name → text) in `directory`, which is created.
    package init(at directory: URL, files: [String: String]) throws {
        self.directory = directory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        current = ""
        current = try writeTimestampedDirectory(files)
        try link(named: "..data", to: current)
        for name in files.keys { try link(named: name, to: "..data/" + name) }
    }

    /// The user-visible path of the file `name`: the per-file link.
    package func url(of name: String) -> URL {
        directory.appendingPathComponent(name, isDirectory: false)
    }

    /// The directory `..data` leads to now.
    package var dataDirectory: URL {
        directory.appendingPathComponent(current, isDirectory: true)
    }

    /// Replaces the volume's files with `files`, as kubelet does; `placing` may put more in the
    /// new directory (given its URL) before `..data` is swapped to it: a FIFO, a folder.
    package mutating func update(_ files: [String: String], placing: (URL) throws -> Void = { _ in }) throws {
        let previous = current
        let next = try writeTimestampedDirectory(files)
        try placing(URL(fileURLWithPath: path(next), isDirectory: true))
        try link(named: "..data_tmp", to: next)
        try check(rename(path("..data_tmp"), path("..data")), "rename ..data_tmp over ..data")
        current = next
        for name in files.keys where !exists(path(name)) { try link(named: name, to: "..data/" + name) }
        try FileManager.default.removeItem(atPath: path(previous))
    }

    private mutating func writeTimestampedDirectory(_ files: [String: String]) throws -> String {
        updates += 1
        let name = String(format: "..2026_11_24_10_00_%02d.%04d", updates % 60, Int.random(in: 0...9999))
        try FileManager.default.createDirectory(atPath: path(name), withIntermediateDirectories: false)
        for (file, text) in files {
            try Data(text.utf8).write(to: URL(fileURLWithPath: path(name + "/" + file)))
        }
        return name
    }

    private func link(named name: String, to target: String) throws {
        try check(symlink(target, path(name)), "symlink \(name) -> \(target)")
    }

    private func path(_ name: String) -> String {
        directory.path + "/" + name
    }

    private func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    private func check(_ result: Int32, _ operation: String) throws {
        guard result == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "\(operation): errno \(errno)"])
        }
    }
}

/// Makes the symlink at `link` point at `target` by renaming a new link over it, as dotfile
/// managers do (`ln -s target .tmp && mv -T .tmp link`).
package func repointSymlink(_ link: URL, to target: String) throws {
    let temporary = link.deletingLastPathComponent().appendingPathComponent(".\(link.lastPathComponent).tmp")
    guard symlink(target, temporary.path) == 0, rename(temporary.path, link.path) == 0 else {
        throw CocoaError(
            .fileWriteUnknown,
            userInfo: [NSLocalizedDescriptionKey: "re-pointing \(link.path): errno \(errno)"]
        )
    }
}
