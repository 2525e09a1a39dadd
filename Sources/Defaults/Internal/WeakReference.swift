/// A reference that does not keep its object alive: `nil` once the object is gone.
///
/// A `weak let` (SE-0481), so the compiler checks it is `Sendable` as it is: it can only be read.
struct WeakReference<Object: AnyObject & Sendable>: Sendable {
    weak let object: Object?

    init(_ object: Object) { self.object = object }
}
