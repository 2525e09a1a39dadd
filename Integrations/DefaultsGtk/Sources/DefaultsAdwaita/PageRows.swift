import CAdw
import DefaultsGtk
import Foundation

/// Makes a page's rows: those a first screen shows at once, the rest a few at a time while the
/// main loop is idle, once the page has been drawn.
///
/// A row costs GTK about a millisecond to make and lay out (libadwaita's rows are made from
/// templates), so a window of a hundred keys would otherwise show its first frame only after all
/// of them; and until then the person sees nothing. Lives as long as the page's widget, which
/// holds it; makes nothing once that widget is disposed.
@MainActor
final class PageRows {
    /// The rows a first screen shows: a window's default height holds about ten.
    static let firstScreen = 12
    /// How long one idle turn of the main loop makes rows for, in microseconds: half a frame.
    static let turn: gint64 = 8_000

    /// The rows made, in order.
    private(set) var made: [PreferencesRowWidgets] = []
    /// The rows not made yet, in order, each with the group it goes in.
    private var waiting: [(group: Widget, row: PreferencesRow)] = []
    private var next = 0
    /// Whether the page is in the queue of those the idle source makes rows for.
    private var isQueued = false
    /// The pages with rows to make, in the order they asked: one idle source serves them all, so
    /// that a turn of the main loop makes rows for ``turn`` however many pages wait.
    private static var queue: [PageRows] = []
    /// That idle source, or 0.
    private static var source: guint = 0
    /// The frame clock and handler waiting for the page's first paint, if any.
    private var paintWait: (clock: OpaquePointer, handler: gulong)?
    /// Set when the page's widget is disposed.
    private var isGone = false

    /// Whether every row is made.
    var isComplete: Bool { next == waiting.count }

    /// Takes charge of `page`'s rows: held by the page, told when it is disposed, and starts making
    /// the rows left once the page is first drawn.
    init(page: Widget) {
        let me = Unmanaged.passRetained(self).toOpaque()
        g_object_weak_ref(
            UnsafeMutableRawPointer(page).assumingMemoryBound(to: GObject.self),
            { data, _ in
                let rows = Unmanaged<PageRows>.fromOpaque(data!).takeRetainedValue()
                MainActor.assumeIsolated { rows.end() }
            },
            me
        )
        connectMapped(page)
    }

    /// Adds `row` to `group`: made now while the first screen is not full, else later.
    func add(_ row: PreferencesRow, to group: Widget) {
        if made.count < Self.firstScreen && isComplete {
            make(row, in: group)
        } else {
            waiting.append((group, row))
        }
    }

    /// Adds `row` to `group` after the page's other rows: made now when they all are, else after
    /// them.
    func append(_ row: PreferencesRow, to group: Widget) {
        if isComplete {
            make(row, in: group)
        } else {
            waiting.append((group, row))
        }
    }

    /// Makes every row not made yet, now (none once the page is disposed: their groups are gone).
    func makeAll() {
        while !isComplete && !isGone { makeNext() }
        stop()
    }

    /// Starts making the rows left while the main loop is idle; once is enough.
    func makeRestWhenIdle() {
        guard !isQueued, !isComplete, !isGone else { return }
        stopWaitingForPaint()
        isQueued = true
        Self.queue.append(self)
        guard Self.source == 0 else { return }
        let callback: @convention(c) (gpointer?) -> gboolean = { _ in
            MainActor.assumeIsolated { PageRows.makeSome() ? 1 : 0 }
        }
        Self.source = g_idle_add_full(G_PRIORITY_DEFAULT_IDLE, callback, nil, nil)
    }

    /// Makes the rows left once `widget` has been drawn (after its frame clock's next paint).
    func makeRestAfterPaint(of widget: Widget) {
        guard paintWait == nil, !isQueued, !isComplete, !isGone,
            let clock = gtk_widget_get_frame_clock(widget)
        else { return }
        let callback: @convention(c) (gpointer?, gpointer?) -> Void = { _, data in
            let rows = Unmanaged<PageRows>.fromOpaque(data!).takeUnretainedValue()
            MainActor.assumeIsolated { rows.makeRestWhenIdle() }
        }
        let handler = g_signal_connect_data(
            UnsafeMutableRawPointer(clock),
            "after-paint",
            unsafeBitCast(callback, to: GCallback.self),
            Unmanaged.passRetained(self).toOpaque(),
            { data, _ in if let data { Unmanaged<PageRows>.fromOpaque(data).release() } },
            GConnectFlags(0)
        )
        g_object_ref(UnsafeMutableRawPointer(clock))
        paintWait = (clock, handler)
    }

    /// One idle turn: makes rows for about ``turn`` (at least one), the first page's first;
    /// whether any page still waits.
    private static func makeSome() -> Bool {
        let end = g_get_monotonic_time() + turn
        var madeOne = false
        while let page = queue.first {
            if page.isGone || page.isComplete {
                page.isQueued = false
                queue.removeFirst()
                continue
            }
            if madeOne && g_get_monotonic_time() >= end { break }
            page.makeNext()
            madeOne = true
        }
        if queue.isEmpty { source = 0 }
        return !queue.isEmpty
    }

    private func makeNext() {
        let (group, row) = waiting[next]
        next += 1
        make(row, in: group)
        if isComplete {
            waiting = []
            next = 0
        }
    }

    private func make(_ row: PreferencesRow, in group: Widget) {
        let widgets = RowController.make(row)
        adw_preferences_group_add(typed(group), widgets.row)
        RowController.placed(widgets.row)
        made.append(widgets)
    }

    /// When the page is mapped (shown in a window), waits for its first paint.
    private func connectMapped(_ page: Widget) {
        let callback: @convention(c) (gpointer?, gpointer?) -> Void = { widget, data in
            let rows = Unmanaged<PageRows>.fromOpaque(data!).takeUnretainedValue()
            MainActor.assumeIsolated { rows.makeRestAfterPaint(of: widget!.assumingMemoryBound(to: GtkWidget.self)) }
        }
        g_signal_connect_data(
            page,
            "map",
            unsafeBitCast(callback, to: GCallback.self),
            Unmanaged.passRetained(self).toOpaque(),
            { data, _ in if let data { Unmanaged<PageRows>.fromOpaque(data).release() } },
            GConnectFlags(0)
        )
    }

    private func stopWaitingForPaint() {
        guard let wait = paintWait else { return }
        paintWait = nil
        g_signal_handler_disconnect(UnsafeMutableRawPointer(wait.clock), wait.handler)
        g_object_unref(UnsafeMutableRawPointer(wait.clock))
    }

    private func stop() {
        stopWaitingForPaint()
        guard isQueued else { return }
        isQueued = false
        Self.queue.removeAll { $0 === self }
        if Self.queue.isEmpty && Self.source != 0 {
            g_source_remove(Self.source)
            Self.source = 0
        }
    }

    /// The page is being disposed: nothing more is made (the groups the rows left would go in
    /// are gone), and none is waiting.
    private func end() {
        isGone = true
        stop()
        waiting = []
        next = 0
    }
}
