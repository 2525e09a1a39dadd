// GTK 4 and GLib for Swift: the headers, and what C does with macros or libdispatch keeps for the
// event loops that drive its main queue.
#include <gtk/gtk.h>
#include <glib-unix.h>
// GSettings' keyfile backend, for comparisons with GSettings that need no session bus.
#define G_SETTINGS_ENABLE_BACKEND
#include <gio/gsettingsbackend.h>
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

// Properties for bindings: what kind of value a property holds, and reading and writing it through
// a GValue of a fixed type, which GLib converts to and from the property's own type.

/// The kinds of property a binding can carry.
typedef enum {
    CGTK_PROPERTY_MISSING = 0,
    CGTK_PROPERTY_BOOLEAN,
    CGTK_PROPERTY_SIGNED,
    CGTK_PROPERTY_UNSIGNED,
    CGTK_PROPERTY_FLOATING,
    CGTK_PROPERTY_STRING,
    CGTK_PROPERTY_UNSUPPORTED,
} CGtkPropertyKind;

/// The kind of `object`'s property `name`, and in `flags` its GParamFlags (readable, writable).
static inline CGtkPropertyKind cgtk_property_kind(gpointer object, const char *name, guint *flags) {
    GParamSpec *spec = g_object_class_find_property(G_OBJECT_GET_CLASS(object), name);
    if (spec == NULL) return CGTK_PROPERTY_MISSING;
    *flags = spec->flags;
    switch (G_TYPE_FUNDAMENTAL(spec->value_type)) {
    case G_TYPE_BOOLEAN: return CGTK_PROPERTY_BOOLEAN;
    case G_TYPE_CHAR: case G_TYPE_INT: case G_TYPE_LONG: case G_TYPE_INT64: return CGTK_PROPERTY_SIGNED;
    case G_TYPE_UCHAR: case G_TYPE_UINT: case G_TYPE_ULONG: case G_TYPE_UINT64: return CGTK_PROPERTY_UNSIGNED;
    case G_TYPE_FLOAT: case G_TYPE_DOUBLE: return CGTK_PROPERTY_FLOATING;
    case G_TYPE_STRING: return CGTK_PROPERTY_STRING;
    default: return CGTK_PROPERTY_UNSUPPORTED;
    }
}

/// The name of `object`'s type, for messages.
static inline const char *cgtk_type_name(gpointer object) { return G_OBJECT_TYPE_NAME(object); }

static inline gboolean cgtk_get_boolean(gpointer object, const char *name) {
    GValue value = G_VALUE_INIT;
    g_value_init(&value, G_TYPE_BOOLEAN);
    g_object_get_property(G_OBJECT(object), name, &value);
    gboolean result = g_value_get_boolean(&value);
    g_value_unset(&value);
    return result;
}

static inline gint64 cgtk_get_int64(gpointer object, const char *name) {
    GValue value = G_VALUE_INIT;
    g_value_init(&value, G_TYPE_INT64);
    g_object_get_property(G_OBJECT(object), name, &value);
    gint64 result = g_value_get_int64(&value);
    g_value_unset(&value);
    return result;
}

static inline guint64 cgtk_get_uint64(gpointer object, const char *name) {
    GValue value = G_VALUE_INIT;
    g_value_init(&value, G_TYPE_UINT64);
    g_object_get_property(G_OBJECT(object), name, &value);
    guint64 result = g_value_get_uint64(&value);
    g_value_unset(&value);
    return result;
}

static inline gdouble cgtk_get_double(gpointer object, const char *name) {
    GValue value = G_VALUE_INIT;
    g_value_init(&value, G_TYPE_DOUBLE);
    g_object_get_property(G_OBJECT(object), name, &value);
    gdouble result = g_value_get_double(&value);
    g_value_unset(&value);
    return result;
}

/// The property's string, newly allocated (free it with g_free), or NULL.
static inline gchar *cgtk_get_string(gpointer object, const char *name) {
    GValue value = G_VALUE_INIT;
    g_value_init(&value, G_TYPE_STRING);
    g_object_get_property(G_OBJECT(object), name, &value);
    gchar *result = g_value_dup_string(&value);
    g_value_unset(&value);
    return result;
}

static inline void cgtk_set_boolean(gpointer object, const char *name, gboolean new_value) {
    GValue value = G_VALUE_INIT;
    g_value_init(&value, G_TYPE_BOOLEAN);
    g_value_set_boolean(&value, new_value);
    g_object_set_property(G_OBJECT(object), name, &value);
    g_value_unset(&value);
}

static inline void cgtk_set_int64(gpointer object, const char *name, gint64 new_value) {
    GValue value = G_VALUE_INIT;
    g_value_init(&value, G_TYPE_INT64);
    g_value_set_int64(&value, new_value);
    g_object_set_property(G_OBJECT(object), name, &value);
    g_value_unset(&value);
}

static inline void cgtk_set_uint64(gpointer object, const char *name, guint64 new_value) {
    GValue value = G_VALUE_INIT;
    g_value_init(&value, G_TYPE_UINT64);
    g_value_set_uint64(&value, new_value);
    g_object_set_property(G_OBJECT(object), name, &value);
    g_value_unset(&value);
}

static inline void cgtk_set_double(gpointer object, const char *name, gdouble new_value) {
    GValue value = G_VALUE_INIT;
    g_value_init(&value, G_TYPE_DOUBLE);
    g_value_set_double(&value, new_value);
    g_object_set_property(G_OBJECT(object), name, &value);
    g_value_unset(&value);
}

static inline void cgtk_set_string(gpointer object, const char *name, const char *new_value) {
    GValue value = G_VALUE_INIT;
    g_value_init(&value, G_TYPE_STRING);
    g_value_set_string(&value, new_value);
    g_object_set_property(G_OBJECT(object), name, &value);
    g_value_unset(&value);
}

/// The type of a GVariant string, for an action's parameter.
static inline const GVariantType *cgtk_variant_type_string(void) { return G_VARIANT_TYPE_STRING; }

/// The type of a GVariant Boolean, for an action's state.
static inline const GVariantType *cgtk_variant_type_boolean(void) { return G_VARIANT_TYPE_BOOLEAN; }

/// g_action_map_add_action for any GObject that is a GActionMap (a GSimpleActionGroup, a
/// GtkApplication, a GtkApplicationWindow); FALSE, adding nothing, for one that is not.
static inline gboolean cgtk_add_action(gpointer map, gpointer action) {
    if (!G_IS_ACTION_MAP(map)) return FALSE;
    g_action_map_add_action(G_ACTION_MAP(map), G_ACTION(action));
    return TRUE;
}

// Pictures of windows, for self-tests: cgtk_save_png, shared with CAdw's shim.
#include "picture.h"
