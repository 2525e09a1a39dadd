import Foundation

extension Store.State {
    /// The layer that sets the stored value `name` now, before any decoding.
    ///
    /// Inside a transaction of `suite` on this task, the transaction's view. `storeFileURL` is
    /// the file the store keeps its values in, when it keeps them in one.
    mutating func source(
        ofValueNamed name: String,
        in suite: Defaults.Suite,
        storeFileURL: URL?
    ) -> Defaults.ValueSource {
        if let secrets = layered.secrets, let value = secrets.values[name] {
            guard value != nil, let file = secrets.fileURL(of: name) else { return .defaultValue }
            return .secret(file)
        }
        if let layers = layered.systemFiles, let index = layers.locks[name] {
            return .locked(
                by: layers.layers[index].url,
                valueFrom: layers.origin(of: name).map { layers.layers[$0].url }
            )
        }
        if let candidate = layered.overrideCandidates(for: name).first {
            switch candidate.source {
            case .launchArgument: return .launchArgument
            case .environment(let variable): return .environment(variable: variable)
            }
        }
        let stored: JSONValue?
        if openTransactions > 0, let scope = TransactionScope.find(for: suite) {
            stored = scope.storedValue(named: name)
        } else {
            stored = values[name]
        }
        // A key read through a migration (its former name's value) has its value from the
        // user's file too.
        let seen = layered.layering.contains(.migrations) ? layered.migrations!.seen(name, stored: stored) : stored
        if seen != nil {
            guard let storeFileURL else { return .suiteStorage }
            return .userFile(suite.fileURL ?? storeFileURL)
        }
        if let layers = layered.systemFiles, let index = layers.origin(of: name) {
            return .systemFile(layers.layers[index].url)
        }
        return .defaultValue
    }
}
