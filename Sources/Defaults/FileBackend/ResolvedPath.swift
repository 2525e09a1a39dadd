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
        // Over bytes, with one buffer for what is resolved (NUL-terminated, for `lstat`) and
        // one for what is left: a String per component was most of opening a small file.
        var links: [String] = []
        var rest = Array(path.utf8)
        var position = 0
        var resolved: [UInt8] = [0]
        var missing = false
        while let (start, end) = nextComponent(of: rest, from: &position) {
            resolved.removeLast()
            if isParent(rest, start, end) {
                while let last = resolved.popLast(), last != UInt8(ascii: "/") {}
                resolved.append(0)
                continue
            }
            let parentEnd = resolved.count
            resolved.append(UInt8(ascii: "/"))
            resolved.append(contentsOf: rest[start..<end])
            resolved.append(0)
            if missing { continue }
            var info = stat()
            let found = resolved.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { lstat($0.baseAddress!, &info) == 0 }
            }
            guard found else {
                // Missing (or unreachable): the rest is where a write would create it.
                missing = true
                continue
            }
            guard (info.st_mode & S_IFMT) == S_IFLNK, links.count < 40 else { continue }
            let link = String(decoding: resolved.dropLast(), as: UTF8.self)
            guard let target = linkTarget(link) else { continue }
            links.append(link)
            resolved.removeSubrange(parentEnd...)
            if target.hasPrefix("/") { resolved.removeAll() }
            resolved.append(0)
            rest = Array(target.utf8) + [UInt8(ascii: "/")] + rest[min(position, rest.count)...]
            position = 0
        }
        resolved.removeLast()
        return ResolvedPath(path: resolved.isEmpty ? "/" : String(decoding: resolved, as: UTF8.self), links: links)
    }

    /// The next component of `bytes` from `position` that names something (not empty, not `.`),
    /// as a range; `position` moves past it.
    private static func nextComponent(of bytes: [UInt8], from position: inout Int) -> (Int, Int)? {
        while position < bytes.count {
            let start = position
            while position < bytes.count, bytes[position] != UInt8(ascii: "/") { position += 1 }
            let end = position
            position += 1
            if end == start || (end - start == 1 && bytes[start] == UInt8(ascii: ".")) { continue }
            return (start, end)
        }
        return nil
    }

    /// Whether `bytes[start..<end]` is `..`.
    private static func isParent(_ bytes: [UInt8], _ start: Int, _ end: Int) -> Bool {
        end - start == 2 && bytes[start] == UInt8(ascii: ".") && bytes[start + 1] == UInt8(ascii: ".")
    }

    /// `path` made absolute (against the working directory) with its `.` and `..` components and
    /// repeated slashes taken out, without looking at the file system: what `URL.standardizedFileURL`
    /// gives, at a small part of its cost.
    static func normalize(_ path: String) -> String {
        if isNormal(path) { return path }
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        let bytes = Array(absolute.utf8)
        var result: [UInt8] = []
        var position = 0
        while let (start, end) = nextComponent(of: bytes, from: &position) {
            if isParent(bytes, start, end) {
                while let last = result.popLast(), last != UInt8(ascii: "/") {}
                continue
            }
            result.append(UInt8(ascii: "/"))
            result.append(contentsOf: bytes[start..<end])
        }
        return result.isEmpty ? "/" : String(decoding: result, as: UTF8.self)
    }

    /// Whether `path` is absolute, with no empty, `.` or `..` component and no slash at its end.
    private static func isNormal(_ path: String) -> Bool {
        var utf8 = path.utf8.makeIterator()
        guard utf8.next() == UInt8(ascii: "/") else { return false }
        // The length of the component so far, and how many of its bytes are dots.
        var length = 0
        var dots = 0
        while let byte = utf8.next() {
            if byte == UInt8(ascii: "/") {
                if length == 0 || (dots == length && length <= 2) { return false }
                length = 0
                dots = 0
            } else {
                length += 1
                if byte == UInt8(ascii: ".") { dots += 1 }
            }
        }
        return path == "/" || (length > 0 && !(dots == length && length <= 2))
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
