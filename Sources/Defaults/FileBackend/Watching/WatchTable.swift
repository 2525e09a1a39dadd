/// Which directories the process's watcher must watch for the files it watches, and what it
/// watches now.
///
/// A file is seen through its directory: one watch per directory, whatever number of settings
/// files it holds. A directory that does not exist (not created yet, or deleted) is watched through
/// its nearest existing ancestor, so its creation is seen and the watch moves down to it. The
/// table only decides; ``FileWatcher`` makes the system calls.
struct WatchTable: Sendable {
    /// The watched file names, by directory.
    private(set) var files: [String: Set<String>] = [:]
    /// Watch descriptors, by the directory they watch.
    private(set) var descriptors: [String: Int32] = [:]
    /// The directory each watch descriptor watches.
    private(set) var directories: [Int32: String] = [:]
    /// For each directory of watched files, the directory it was last watched through.
    private var watchedThrough: [String: String] = [:]

    /// Starts watching the file at `path`.
    mutating func addFile(_ path: String) {
        let (directory, name) = Self.split(path)
        files[directory, default: []].insert(name)
    }

    /// Stops watching the file at `path`.
    mutating func removeFile(_ path: String) {
        let (directory, name) = Self.split(path)
        files[directory]?.remove(name)
        if files[directory]?.isEmpty == true {
            files[directory] = nil
            watchedThrough[directory] = nil
        }
    }

    /// Whether `path` is a watched file.
    func contains(file path: String) -> Bool {
        let (directory, name) = Self.split(path)
        return files[directory]?.contains(name) == true
    }

    /// The paths of the watched files in `directory`.
    func filePaths(in directory: String) -> [String] {
        (files[directory] ?? []).map { Self.join(directory, $0) }
    }

    /// The paths of every watched file.
    var allFilePaths: [String] {
        files.flatMap { directory, names in names.map { Self.join(directory, $0) } }
    }

    /// For each directory of watched files, the directory to watch now: itself if it exists, or
    /// else its nearest existing ancestor.
    func targets(isDirectory: (String) -> Bool) -> [String: String] {
        var result: [String: String] = [:]
        for directory in files.keys {
            var candidate = directory
            while !isDirectory(candidate), let parent = Self.parent(of: candidate) {
                candidate = parent
            }
            result[directory] = candidate
        }
        return result
    }

    /// Records that `directory` is watched by `descriptor`.
    mutating func recordWatch(of directory: String, descriptor: Int32) {
        if let previous = directories[descriptor] { descriptors[previous] = nil }
        descriptors[directory] = descriptor
        directories[descriptor] = directory
    }

    /// Forgets the watch `descriptor`; returns the directory it watched, if it was known.
    @discardableResult
    mutating func forget(descriptor: Int32) -> String? {
        guard let directory = directories.removeValue(forKey: descriptor) else { return nil }
        descriptors[directory] = nil
        return directory
    }

    /// Records the targets the watcher now watches through; returns the directories of watched
    /// files whose target changed (their files may have changed unseen meanwhile).
    mutating func adopt(_ targets: [String: String]) -> [String] {
        var moved: [String] = []
        for (directory, target) in targets where files[directory] != nil && watchedThrough[directory] != target {
            watchedThrough[directory] = target
            moved.append(directory)
        }
        return moved
    }

    /// The directory and last component of `path`.
    static func split(_ path: String) -> (directory: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let directory = slash == path.startIndex ? "/" : String(path[..<slash])
        return (directory, String(path[path.index(after: slash)...]))
    }

    /// `directory` and `name` joined with one slash.
    static func join(_ directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }

    /// The parent of `directory`; `nil` for the root.
    static func parent(of directory: String) -> String? {
        guard directory != "/" else { return nil }
        return split(directory).directory
    }
}
