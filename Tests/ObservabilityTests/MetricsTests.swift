import Foundation
import Testing
@testable import Observability

@Suite("Metrics registry")
struct MetricsRegistryTests {
    @Test("the same name and labels return the same cached object, in any label order")
    func cached() {
        let registry = MetricsRegistry()
        let a = registry.counter("pushes_total", help: "Pushes.", labels: ["status": "201", "host": "prod"])
        let b = registry.counter("pushes_total", help: "Pushes.", labels: ["host": "prod", "status": "201"])
        let c = registry.counter("pushes_total", help: "Pushes.", labels: ["status": "410", "host": "prod"])
        #expect(a === b)
        #expect(a !== c)
        a.increment()
        b.increment(by: 2)
        #expect(a.value == 3)
        #expect(c.value == 0)
    }

    @Test("a removed series is no longer rendered; the others of its family are")
    func removeSeries() {
        let registry = MetricsRegistry()
        registry.gauge("expiry_seconds", help: "h", labels: ["app": "beta"]).set(5)
        registry.gauge("expiry_seconds", help: "h", labels: ["app": "other"]).set(7)
        registry.remove("expiry_seconds", labels: ["app": "beta"])
        let text = registry.prometheusText()
        #expect(!text.contains(#"app="beta""#))
        #expect(text.contains(#"expiry_seconds{app="other"} 7"#))
    }

    @Test("counters ignore negative increments; gauges go both ways")
    func counterAndGauge() {
        let registry = MetricsRegistry()
        let counter = registry.counter("c_total", help: "c")
        counter.increment(by: -5)
        #expect(counter.value == 0)
        let gauge = registry.gauge("g", help: "g")
        gauge.increment(by: 3)
        gauge.decrement()
        #expect(gauge.value == 2)
        gauge.set(-1.5)
        #expect(gauge.value == -1.5)
    }

    @Test("concurrent increments are all counted")
    func concurrent() {
        let registry = MetricsRegistry()
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            let counter = registry.counter("hits_total", help: "h")
            let gauge = registry.gauge("level", help: "l")
            let histogram = registry.histogram("lat_seconds", help: "l", buckets: [1])
            for _ in 0..<1000 {
                counter.increment()
                gauge.increment()
                histogram.observe(0.5)
            }
        }
        #expect(registry.counter("hits_total", help: "h").value == 8000)
        #expect(registry.gauge("level", help: "l").value == 8000)
        #expect(registry.histogram("lat_seconds", help: "l", buckets: [1]).snapshot.count == 8000)
    }
}

@Suite("Prometheus text exposition 0.0.4")
struct PrometheusTextTests {
    @Test("counters and gauges: HELP, TYPE, sorted families and series")
    func countersAndGauges() {
        let registry = MetricsRegistry()
        registry.gauge("relay_connections", help: "Open inbound connections.").set(3)
        registry.counter("relay_pushes_total", help: "Pushes by status.", labels: ["status": "410"]).increment()
        registry.counter("relay_pushes_total", help: "Pushes by status.", labels: ["status": "201"]).increment(by: 5)
        #expect(registry.prometheusText() == """
            # HELP relay_connections Open inbound connections.
            # TYPE relay_connections gauge
            relay_connections 3
            # HELP relay_pushes_total Pushes by status.
            # TYPE relay_pushes_total counter
            relay_pushes_total{status="201"} 5
            relay_pushes_total{status="410"} 1

            """)
    }

    @Test("histograms: cumulative buckets ending in +Inf, then _sum and _count")
    func histogram() {
        let registry = MetricsRegistry()
        let h = registry.histogram("push_seconds", help: "Push latency.", labels: ["host": "a"], buckets: [1, 0.1, 0.5, 1])
        #expect(h.buckets == [0.1, 0.5, 1])
        for value in [0.05, 0.1, 0.3, 0.7, 2.0] { h.observe(value) }
        h.observe(Duration.milliseconds(250))
        #expect(registry.prometheusText() == """
            # HELP push_seconds Push latency.
            # TYPE push_seconds histogram
            push_seconds_bucket{host="a",le="0.1"} 2
            push_seconds_bucket{host="a",le="0.5"} 4
            push_seconds_bucket{host="a",le="1"} 5
            push_seconds_bucket{host="a",le="+Inf"} 6
            push_seconds_sum{host="a"} 3.4
            push_seconds_count{host="a"} 6

            """)
    }

    @Test("label values escape backslash, quote and newline; HELP escapes backslash and newline")
    func escaping() {
        let registry = MetricsRegistry()
        registry.counter("odd_total", help: "a \\ b\nc \"q\"", labels: ["v": "x\\y\"z\nw"]).increment()
        #expect(registry.prometheusText() == """
            # HELP odd_total a \\\\ b\\nc "q"
            # TYPE odd_total counter
            odd_total{v="x\\\\y\\"z\\nw"} 1

            """)
    }

    @Test("special values use the spellings Prometheus parses")
    func specialValues() {
        #expect(MetricsRegistry.formatValue(.infinity) == "+Inf")
        #expect(MetricsRegistry.formatValue(-.infinity) == "-Inf")
        #expect(MetricsRegistry.formatValue(.nan) == "NaN")
        #expect(MetricsRegistry.formatValue(2.5) == "2.5")
        #expect(MetricsRegistry.formatValue(10) == "10")
    }

    @Test("names are checked against the Prometheus grammar")
    func names() {
        #expect(MetricsRegistry.isValidMetricName("relay:pushes_total"))
        #expect(!MetricsRegistry.isValidMetricName("9lives"))
        #expect(!MetricsRegistry.isValidMetricName("has-dash"))
        #expect(MetricsRegistry.isValidLabelName("status_code"))
        #expect(!MetricsRegistry.isValidLabelName("__reserved"))
        #expect(!MetricsRegistry.isValidLabelName("a:b"))
    }

    @Test("an empty registry renders nothing")
    func empty() {
        #expect(MetricsRegistry().prometheusText() == "")
    }
}
