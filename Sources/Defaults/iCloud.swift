import Foundation

// Every deprecation repeats its message: an attribute's message must be a plain literal.

extension Defaults {
    // swift-format-ignore: TypeNamesShouldBeCapitalized
    /// sindresorhus/Defaults' iCloud sync, as spellings only: code written for it compiles here,
    /// and nothing is synced.
    ///
    /// On Apple platforms this keeps keys in step with `NSUbiquitousKeyValueStore`. Linux has no
    /// iCloud; every member is deprecated with a message saying so, and does nothing beyond
    /// remembering which keys were added (``keys``). Settings are shared between machines here by
    /// keeping the suite's file in a synced folder (the suite follows a sync tool's replacement of
    /// the file as it follows any outside change), or by keeping the suite in etcd (DefaultsEtcd).
    public enum iCloud {
        private static let state = Lock(ICloudState())

        /// The keys added, by ``add(_:)-(Defaults.Keys...)`` or a key made with `iCloud: true`;
        /// none is synced.
        @available(
            *,
            deprecated,
            message:
                "iCloud does not exist on Linux, so this syncs nothing. Share settings between machines with a suite in a synced folder (Syncthing, Nextcloud) or in etcd (DefaultsEtcd)."
        )
        public static var keys: Set<Defaults.Keys> { state.withLock { $0.keys } }

        /// Whether sync would be logged; there is nothing to log on Linux.
        @available(
            *,
            deprecated,
            message:
                "iCloud does not exist on Linux, so this syncs nothing. Share settings between machines with a suite in a synced folder (Syncthing, Nextcloud) or in etcd (DefaultsEtcd)."
        )
        public static var isDebug: Bool {
            get { state.withLock { $0.isDebug } }
            set { state.withLock { $0.isDebug = newValue } }
        }

        /// Whether every change would be pushed at once; there is nothing to push on Linux.
        @available(
            *,
            deprecated,
            message:
                "iCloud does not exist on Linux, so this syncs nothing. Share settings between machines with a suite in a synced folder (Syncthing, Nextcloud) or in etcd (DefaultsEtcd)."
        )
        public static var syncOnChange: Bool {
            get { state.withLock { $0.syncOnChange } }
            set { state.withLock { $0.syncOnChange = newValue } }
        }

        /// Remembers `keys` as synced ones; nothing is synced.
        @available(
            *,
            deprecated,
            message:
                "iCloud does not exist on Linux, so this syncs nothing. Share settings between machines with a suite in a synced folder (Syncthing, Nextcloud) or in etcd (DefaultsEtcd)."
        )
        public static func add(_ keys: Defaults.Keys...) {
            add(keys)
        }

        /// Remembers `keys` as synced ones; nothing is synced.
        @available(
            *,
            deprecated,
            message:
                "iCloud does not exist on Linux, so this syncs nothing. Share settings between machines with a suite in a synced folder (Syncthing, Nextcloud) or in etcd (DefaultsEtcd)."
        )
        public static func add(_ keys: [Defaults.Keys]) {
            state.withLock { $0.keys.formUnion(keys) }
        }

        /// Forgets `keys`.
        @available(
            *,
            deprecated,
            message:
                "iCloud does not exist on Linux, so this syncs nothing. Share settings between machines with a suite in a synced folder (Syncthing, Nextcloud) or in etcd (DefaultsEtcd)."
        )
        public static func remove(_ keys: Defaults.Keys...) {
            remove(keys)
        }

        /// Forgets `keys`.
        @available(
            *,
            deprecated,
            message:
                "iCloud does not exist on Linux, so this syncs nothing. Share settings between machines with a suite in a synced folder (Syncthing, Nextcloud) or in etcd (DefaultsEtcd)."
        )
        public static func remove(_ keys: [Defaults.Keys]) {
            state.withLock { $0.keys.subtract(keys) }
        }

        /// Forgets every key.
        @available(
            *,
            deprecated,
            message:
                "iCloud does not exist on Linux, so this syncs nothing. Share settings between machines with a suite in a synced folder (Syncthing, Nextcloud) or in etcd (DefaultsEtcd)."
        )
        public static func removeAll() {
            state.withLock { $0.keys.removeAll() }
        }

        /// Returns at once: there is no sync to wait for.
        @available(
            *,
            deprecated,
            message:
                "iCloud does not exist on Linux, so this syncs nothing. Share settings between machines with a suite in a synced folder (Syncthing, Nextcloud) or in etcd (DefaultsEtcd)."
        )
        public static func waitForSyncCompletion() async {}

        /// Returns at once: there is no sync to wait for (the older name of
        /// ``waitForSyncCompletion()``).
        @available(
            *,
            deprecated,
            message:
                "iCloud does not exist on Linux, so this syncs nothing. Share settings between machines with a suite in a synced folder (Syncthing, Nextcloud) or in etcd (DefaultsEtcd)."
        )
        public static func sync() async {}

        /// Does nothing: there is no iCloud store to synchronize.
        @available(
            *,
            deprecated,
            message:
                "iCloud does not exist on Linux, so this syncs nothing. Share settings between machines with a suite in a synced folder (Syncthing, Nextcloud) or in etcd (DefaultsEtcd)."
        )
        public static func synchronize() {}

        /// Does nothing: there is nothing to sync the keys with.
        @available(
            *,
            deprecated,
            message:
                "iCloud does not exist on Linux, so this syncs nothing. Share settings between machines with a suite in a synced folder (Syncthing, Nextcloud) or in etcd (DefaultsEtcd)."
        )
        public static func syncWithoutWaiting() {}

        /// Does nothing: there is nothing to sync `keys` with.
        @available(
            *,
            deprecated,
            message:
                "iCloud does not exist on Linux, so this syncs nothing. Share settings between machines with a suite in a synced folder (Syncthing, Nextcloud) or in etcd (DefaultsEtcd)."
        )
        public static func syncWithoutWaiting(_ keys: Defaults.Keys..., source: DataSource? = nil) {}
    }

    /// Where sindresorhus/Defaults' iCloud sync would take a value from; unused on Linux.
    public enum DataSource: Sendable {
        /// The key's own suite.
        case local
        /// The iCloud store.
        case remote
    }
}

/// What ``Defaults/iCloud`` remembers.
private struct ICloudState: Sendable {
    var keys: Set<Defaults.Keys> = []
    var isDebug = false
    var syncOnChange = false
}

extension Defaults.Key {
    /// A key with a default value, and sindresorhus/Defaults' `iCloud` flag, which syncs nothing on
    /// Linux; with `iCloud: true` the key is only remembered in ``Defaults/iCloud/keys``.
    @available(
        *,
        deprecated,
        message:
            "iCloud does not exist on Linux, so this syncs nothing. Share settings between machines with a suite in a synced folder (Syncthing, Nextcloud) or in etcd (DefaultsEtcd)."
    )
    public convenience init(
        _ name: String,
        default defaultValue: Value,
        suite: Defaults.Suite = .standard,
        iCloud: Bool
    ) {
        self.init(name, default: defaultValue, suite: suite)
        if iCloud { Defaults.iCloud.add(self) }
    }

    /// A key whose default is computed when first needed, and sindresorhus/Defaults' `iCloud` flag,
    /// which syncs nothing on Linux.
    @available(
        *,
        deprecated,
        message:
            "iCloud does not exist on Linux, so this syncs nothing. Share settings between machines with a suite in a synced folder (Syncthing, Nextcloud) or in etcd (DefaultsEtcd)."
    )
    public convenience init(
        _ name: String,
        suite: Defaults.Suite = .standard,
        iCloud: Bool,
        default defaultValue: @escaping @Sendable () -> Value
    ) {
        self.init(name, suite: suite, default: defaultValue)
        if iCloud { Defaults.iCloud.add(self) }
    }

    /// A key with a default value in the file that stands for `suite`, and sindresorhus/Defaults'
    /// `iCloud` flag, which syncs nothing on Linux.
    @available(
        *,
        deprecated,
        message:
            "iCloud does not exist on Linux, so this syncs nothing. Share settings between machines with a suite in a synced folder (Syncthing, Nextcloud) or in etcd (DefaultsEtcd)."
    )
    public convenience init(_ name: String, default defaultValue: Value, suite: UserDefaults, iCloud: Bool) {
        self.init(name, default: defaultValue, suite: suite)
        if iCloud { Defaults.iCloud.add(self) }
    }

    /// An optional key in the file that stands for `suite`, and sindresorhus/Defaults' `iCloud`
    /// flag, which syncs nothing on Linux.
    @available(
        *,
        deprecated,
        message:
            "iCloud does not exist on Linux, so this syncs nothing. Share settings between machines with a suite in a synced folder (Syncthing, Nextcloud) or in etcd (DefaultsEtcd)."
    )
    public convenience init<Wrapped>(_ name: String, suite: UserDefaults, iCloud: Bool) where Value == Wrapped? {
        self.init(name, default: nil, suite: suite)
        if iCloud { Defaults.iCloud.add(self) }
    }

    /// An optional key, nil by default, and sindresorhus/Defaults' `iCloud` flag, which syncs
    /// nothing on Linux.
    @available(
        *,
        deprecated,
        message:
            "iCloud does not exist on Linux, so this syncs nothing. Share settings between machines with a suite in a synced folder (Syncthing, Nextcloud) or in etcd (DefaultsEtcd)."
    )
    public convenience init<Wrapped>(_ name: String, suite: Defaults.Suite = .standard, iCloud: Bool)
    where Value == Wrapped? {
        self.init(name, default: nil, suite: suite)
        if iCloud { Defaults.iCloud.add(self) }
    }
}
