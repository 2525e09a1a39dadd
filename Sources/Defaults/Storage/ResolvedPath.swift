import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Where a path leads now, and the symlinks it passes on the way.
///
/// A settings file is often reached through links that other programs change while it is open:
/// kubelet swaps a ConfigMap volume's `..data` link, a dotfile manager re-points
/// `~/.config/app/settings.json` by rename. A store watches every link on the way as well as the
/// file, and resolves the path again when one of them changes.
struct ResolvedPath: Equatable, Sendable {
    /// The path with every symlink followed, as the kernel would follow them; components that do
    /// not exist yet are kept as given.
    var path: String
    /// Every symlink the path went through, as the link's own path, in the order followed.
    var links: [String]

    /// What to watch: the links on the way, and the file they lead to.
    var watchedEntries: [String] { links + [path] }

    /// The directory that holds ``path``.
    var directory: String { WatchTable.split(path).directory }

    /// The last component of ``path``.
    var fileName: String { WatchTable.split(path).name }

    /// Follows the absolute path `path`, component by component, through every symlink.
    ///
    /// A link to a file that does not exist yet leads to where it points (the first write creates
    /// the file there and keeps the link). Past the first missing component, the rest is kept as
    /// given. After 40 links (the kernel's limit) it stops following, and the rest is kept as given.
    static func resolve(_ path: String) -> ResolvedPath {
        var links: [String] = []
        // NB: the components still to follow, last one first, so a link's target is pushed on top.
        var pending = Array(components(of: path).reversed())
        var resolved = ""
        while let component = pending.popLast() {
            if component == ".." {
                resolved = WatchTable.parent(of: resolved.isEmpty ? "/" : resolved) ?? "/"
                if resolved == "/" { resolved = "" }
                continue
            }
            let candidate = resolved + "/" + component
            var info = stat()
            guard lstat(candidate, &info) == 0 else {
                // Missing (or unreachable): the rest is where a write would create it.
                resolved = candidate
                for rest in pending.reversed() { resolved = join(resolved, rest) }
                break
            }
            guard (info.st_mode & S_IFMT) == S_IFLNK, links.count < 40, let target = linkTarget(candidate) else {
                resolved = candidate
                continue
            }
            links.append(candidate)
            if target.hasPrefix("/") { resolved = "" }
            pending.append(contentsOf: components(of: target).reversed())
        }
        return ResolvedPath(path: resolved.isEmpty ? "/" : resolved, links: links)
    }

    /// The components of `path` that name something: no empty ones, no `.`.
    private static func components(of path: String) -> [String] {
        path.split(separator: "/", omittingEmptySubsequences: true).map(String.init).filter { $0 != "." }
    }

    /// `base` and `component` joined, `..` taking `base` up a level.
    private static func join(_ base: String, _ component: String) -> String {
        if component == ".." { return WatchTable.parent(of: base) ?? "/" }
        return WatchTable.join(base.isEmpty ? "/" : base, component)
    }

    /// The text of the symlink at `path`; `nil` when it cannot be read.
    private static func linkTarget(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Why this process may not replace the file at ``path``; `nil` when it may, or when only
    /// trying can tell (an obstacle that is not a permission, which a write reports).
    ///
    /// A file is replaced by renaming a new file over it, which needs its directory writable, and
    /// the lock file is made beside it; a file this process may not write is left alone too, as
    /// an editor does with a read-only file. A directory not made yet counts through its nearest
    /// existing ancestor, where it would be made.
    var readOnlyReason: String? {
        var info = stat()
        if stat(path, &info) == 0 {
            if let denied = Self.denial(of: path, what: "the file") { return denied }
        }
        var directory = self.directory
        while stat(directory, &info) != 0 {
            guard errno == ENOENT, let parent = WatchTable.parent(of: directory) else { return nil }
            directory = parent
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else { return nil }
        return Self.denial(of: directory, what: "its directory \(directory)", mode: W_OK | X_OK)
    }

    /// Why writing `path` is refused to this process (its effective user), when it is a permission
    /// or a read-only file system.
    private static func denial(of path: String, what: String, mode: Int32 = W_OK) -> String? {
        guard faccessat(AT_FDCWD, path, mode, AT_EACCESS) != 0 else { return nil }
        let code = errno
        guard code == EACCES || code == EPERM || code == EROFS else { return nil }
        let why = code == EROFS ? "is on a read-only file system" : "may not be written by this user"
        return "\(what) \(why)"
    }
}
