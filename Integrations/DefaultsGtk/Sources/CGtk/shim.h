// GTK 4 and GLib for Swift: the headers, and what C does with macros or libdispatch keeps for the
// event loops that drive its main queue.
#include <gtk/gtk.h>
#include <glib-unix.h>
#include <sys/eventfd.h>

// libdispatch's hooks for an event loop that drives the main queue (CoreFoundation's run loop uses
// them): a descriptor that becomes readable when the main queue has work, and the call that runs it.
extern int _dispatch_get_main_queue_handle_4CF(void);
extern void _dispatch_main_queue_callback_4CF(void *message);

/// Runs the main queue's work: called by GLib when the main queue's descriptor is readable.
static gboolean cgtk_drain_main_queue(gint descriptor, GIOCondition condition, gpointer data) {
    eventfd_t ignored;
    // NB: cleared first, so work enqueued while the queue drains wakes the loop again.
    eventfd_read(descriptor, &ignored);
    _dispatch_main_queue_callback_4CF(NULL);
    return G_SOURCE_CONTINUE;
}

/// Makes the default GLib main context run the work of libdispatch's main queue (and so the main
/// actor's) whenever it is iterated. Call on the main thread; returns the source's id.
static inline guint cgtk_attach_main_queue(void) {
    return g_unix_fd_add(_dispatch_get_main_queue_handle_4CF(), G_IO_IN, cgtk_drain_main_queue, NULL);
}

/// g_signal_connect, which is a macro: connects `handler` to `signal` of `instance`.
static inline gulong cgtk_connect(gpointer instance, const char *signal, GCallback handler, gpointer data) {
    return g_signal_connect_data(instance, signal, handler, data, NULL, (GConnectFlags)0);
}
