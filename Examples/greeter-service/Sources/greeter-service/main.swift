// An HTTP service whose answers follow its settings while it runs.
//
//     swift run greeter-service --port 8080 [--settings <file> | --etcd etcd://127.0.0.1:2379/config/greeter/]
//     curl localhost:8080/greet?name=Ada                    # Hello, Ada!
//     defaults write greeter-service greeting '"Welcome"'  # the next answer: Welcome, Ada!
//     defaults write greeter-service shout true             # WELCOME, ADA!
//     defaults write greeter-service rateLimit 2            # a third request in a minute: 429
//     defaults write greeter-service logLevel '"debug"'     # a debug line per request
//     curl -X POST localhost:8080/visits                    # counted in the settings file
//     curl localhost:8080/database                          # uses $CREDENTIALS_DIRECTORY/database.password
//     etcdctl put /config/greeter/greeting '"Hi"'           # with --etcd: Hi, Ada! on every instance
//     curl localhost:8080/metrics                           # defaults_changes_from_elsewhere_total, …
//
// The settings suite runs as a service listed before the HTTP server, so on SIGTERM the server
// drains first and the suite stores what the last requests wrote.
import Defaults
import DefaultsObservation
import DefaultsServices
import Foundation
import Hummingbird
import Logging
import Metrics
import Prometheus
import Synchronization

LoggingSystem.bootstrap { label in
    LiveLevelLogHandler(wrapping: StreamLogHandler.standardOutput(label: label), level: .logLevel)
}
let logger = Logger(label: "greeter-service")
// What the suites do, counted by DefaultsService, for Prometheus to scrape at /metrics.
let metrics = PrometheusCollectorRegistry()
MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: metrics))
_ = try? settings.publishSchema(for: .greeting, .shout, .rateLimit, .logLevel, .visits, .databasePassword)

/// Requests answered in the current minute; a new limit starts a new minute.
let window = Mutex<(start: ContinuousClock.Instant, count: Int)>((.now, 0))
let limitChanges = Defaults.observe(.rateLimit, options: []) { change in
    window.withLock { $0 = (.now, 0) }
    logger.info("rate limit now \(change.newValue) a minute")
}

// One line per change, from this process or any other, so a person (or a test) sees it arrive.
let answerChanges = Defaults.observe(keys: .greeting, .shout, .logLevel, options: []) {
    logger.info("settings changed: greeting \(Defaults[.greeting]), shout \(Defaults[.shout])")
}

/// Whether one more request fits in `window`'s minute under `limit`.
func admit(under limit: Int, in window: borrowing Mutex<(start: ContinuousClock.Instant, count: Int)>) -> Bool {
    window.withLock { window in
        if window.start.duration(to: .now) >= .seconds(60) { window = (.now, 0) }
        guard window.count < limit else { return false }
        window.count += 1
        return true
    }
}

/// The answer to `/greet`, from what the caller read.
func greet(_ request: Request, greeting: String, shout: Bool, admitted: Bool) -> Response {
    guard admitted else { return Response(status: .tooManyRequests) }
    let name = request.uri.queryParameters.get("name") ?? "world"
    var answer = "\(greeting), \(name)!"
    if shout { answer = answer.uppercased() }
    logger.debug("answered /greet", metadata: ["name": "\(name)"])
    return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: answer + "\n")))
}

let router = Router()
router.get("greet") { request, _ -> Response in
    let admitted = admit(under: Defaults[.rateLimit], in: window)
    return greet(request, greeting: Defaults[.greeting], shout: Defaults[.shout], admitted: admitted)
}

// The same route with constants where /greet reads its settings: the baseline of the answer-rate
// benchmark (Benchmarks/, "AnswerRate"), which shows what reading settings per request costs.
let constantWindow = Mutex<(start: ContinuousClock.Instant, count: Int)>((.now, 0))
router.get("greet-constant") { request, _ -> Response in
    greet(request, greeting: "Hello", shout: false, admitted: admit(under: .max, in: constantWindow))
}
router.post("visits") { _, _ -> String in
    Defaults[.visits] += 1
    logger.debug("counted a visit")
    return "\(Defaults[.visits])\n"
}

// Stands for a database connection: it uses the secret, and says only whether there is one.
router.get("database") { _, _ -> Response in
    let password = Defaults[.databasePassword]
    guard !password.isEmpty else {
        return Response(
            status: .serviceUnavailable,
            body: .init(byteBuffer: ByteBuffer(string: "database: no password\n"))
        )
    }
    logger.debug("connecting to the database")
    let answer = "database: connecting with a \(password.count)-character password\n"
    return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: answer)))
}

router.get("metrics") { _, _ -> Response in
    Response(status: .ok, body: .init(byteBuffer: ByteBuffer(bytes: metrics.emitToBuffer())))
}

let port = option("--port").flatMap(Int.init) ?? 8080
let app = Application(
    router: router,
    configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: "greeter-service"),
    // Listed before the server, which the application starts last: stopped after it drains.
    services: [DefaultsService(suites: [settings], logger: logger)],
    onServerRunning: { channel in
        say("listening on \(channel.localAddress?.port ?? port)")
    },
    logger: logger
)
try await app.runService()
withExtendedLifetime((limitChanges, answerChanges)) {}
say("stopped")
