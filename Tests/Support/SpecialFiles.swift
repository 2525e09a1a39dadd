// Files that are not regular files, for the tests of what is read in a file's place: FIFOs, sockets,
// and a way to run code that may block on one without letting it hang the test run.
import Defaults
import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Makes a FIFO (a named pipe) at `url`, readable and writable by its owner.
package func makeFIFO(at url: URL) throws {
    guard mkfifo(url.path, 0o600) == 0 else {
        throw HelperProcessError(description: "mkfifo \(url.path): \(String(cString: strerror(errno)))")
    }
}

/// Lets a reader blocked opening the FIFO at `url`, or reading it, go on.
///
/// Opens the FIFO for writing without waiting, and closes it, so the reader sees its end. Does
/// nothing when nobody has it open for reading, or when `url` is no FIFO.
package func releaseFIFO(at url: URL) {
    var info = stat()
    guard lstat(url.path, &info) == 0, info.st_mode & S_IFMT == S_IFIFO else { return }
    let descriptor = open(url.path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
    if descriptor >= 0 { close(descriptor) }
}

/// Makes a UNIX socket at `url`, as a server that listens there leaves it; the socket itself is
/// closed, and its file stays.
package func makeSocket(at url: URL) throws {
    let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw HelperProcessError(description: "socket: errno \(errno)") }
    defer { close(descriptor) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let path = Array(url.path.utf8)
    guard path.count < MemoryLayout.size(ofValue: address.sun_path) else {
        throw HelperProcessError(description: "the path \(url.path) is too long for a socket")
    }
    withUnsafeMutableBytes(of: &address.sun_path) { buffer in
        buffer.copyBytes(from: path)
        buffer[path.count] = 0
    }
    let bound = withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
    }
    guard bound == 0 else { throw HelperProcessError(description: "bind \(url.path): errno \(errno)") }
}

/// Runs `body`, which may block forever on a FIFO if what it tests regresses, on a thread of its
/// own, and waits for it up to `deadline` seconds without holding a thread of the cooperative pool.
///
/// - Returns: What `body` returned; `nil` when it had not returned by the deadline. The FIFOs at
///   `fifos` are then released (``releaseFIFO(at:)``), so the blocked thread ends, and the test
///   fails instead of hanging the run.
package func returningDespiteFIFOs<Result: Sendable>(
    _ fifos: [URL],
    deadline: Double = HelperProcess.lineDeadline,
    _ body: @escaping @Sendable () -> Result
) async -> Result? {
    let box = Lock<Result?>(nil)
    let finished = DispatchSemaphore(value: 0)
    let thread = Thread {
        let result = body()
        box.withLock { $0 = result }
        finished.signal()
    }
    thread.start()
    let returned = await offThePool { finished.wait(timeout: .now() + deadline) == .success }
    guard returned else {
        for fifo in fifos { releaseFIFO(at: fifo) }
        return nil
    }
    return box.withLock { $0 }
}
