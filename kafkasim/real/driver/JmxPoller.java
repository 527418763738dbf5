// kafkasim's gauge sampler for a real Kafka cluster: every sample_interval_ms from time 0 (the spec's go file)
// until duration_ms, each broker's JMX gauges that kafkasim also samples, as tab-separated rows
// (time_ms, metric, entity, value) in the spec's jmx_out file; the controller's too (jmx_controller). One thread per
// node: a paused or crashed
// broker misses its samples without holding up the others (RMI calls time out after
// -Dsun.rmi.transport.tcp.responseTimeout ms; a broker that went away is connected to again).
//
//   java -cp CLASSES:LIBS/* JmxPoller SPEC.json

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.locks.LockSupport;
import javax.management.InstanceNotFoundException;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

public class JmxPoller {
    // (kafkasim metric, MBean pattern, attribute, entity kind): "broker", "purgatory", "partition", "replica".
    static final String[][] GAUGES = {
        {"RequestQueueSize", "kafka.network:type=RequestChannel,name=RequestQueueSize", "Value", "broker"},
        {"NetworkProcessorAvgIdlePercent", "kafka.network:type=SocketServer,name=NetworkProcessorAvgIdlePercent", "Value", "broker"},
        {"LeaderCount", "kafka.server:type=ReplicaManager,name=LeaderCount", "Value", "broker"},
        {"UnderReplicatedPartitions", "kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions", "Value", "broker"},
        {"UnderMinIsrPartitionCount", "kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount", "Value", "broker"},
        {"IsrShrinksTotal", "kafka.server:type=ReplicaManager,name=IsrShrinksPerSec", "Count", "broker"},
        {"IsrExpandsTotal", "kafka.server:type=ReplicaManager,name=IsrExpandsPerSec", "Count", "broker"},
        {"PurgatorySize", "kafka.server:type=DelayedOperationPurgatory,name=PurgatorySize,delayedOperation=*", "Value", "purgatory"},
        {"NumDelayedOperations", "kafka.server:type=DelayedOperationPurgatory,name=NumDelayedOperations,delayedOperation=*", "Value", "purgatory"},
        {"IsrSize", "kafka.cluster:type=Partition,name=InSyncReplicasCount,topic=*,partition=*", "Value", "partition"},
        {"UnderMinIsr", "kafka.cluster:type=Partition,name=UnderMinIsr,topic=*,partition=*", "Value", "partition"},
        {"LogEndOffset", "kafka.log:type=Log,name=LogEndOffset,topic=*,partition=*", "Value", "replica"},
    };
    // The active controller's (KRaft: ControllerMetadataMetrics), entity "controller" as kafkasim's.
    static final String[][] CONTROLLER_GAUGES = {
        {"OfflinePartitionsCount", "kafka.controller:type=KafkaController,name=OfflinePartitionsCount", "Value", "controller"},
    };
    static volatile long baseNanos;
    // Each gauge's MBean names are looked up (queryNames, one call per gauge, 12 a sample beside one call per value
    // read) at the first sample, again every NAMES_EVERY samples (a partition created meanwhile) and after one is
    // gone (a deleted topic's), not at every sample: each call is work for the brokers, whose requests a sample
    // pauses. Looked up at every sample, an acks=all run's produce p99 at one sample a second was 28-46 ms in
    // three runs; cached, 23-32 ms in three runs made in turn with them (docs/calibration.md).
    static final int NAMES_EVERY = 10;

    public static void main(String[] args) throws Exception {
        JsonNode spec = new ObjectMapper().readTree(Files.readAllBytes(Paths.get(args[0])));
        Path go = Paths.get(spec.get("go_file").asText());
        while (!Files.exists(go) || Files.size(go) == 0) Thread.sleep(5);
        long t0 = Long.parseLong(new String(Files.readAllBytes(go), StandardCharsets.UTF_8).trim());
        while (System.currentTimeMillis() < t0) Thread.sleep(1);
        baseNanos = System.nanoTime();
        double interval = spec.get("sample_interval_ms").asDouble();
        double duration = spec.get("duration_ms").asDouble();
        BufferedWriter out = Files.newBufferedWriter(Paths.get(spec.get("jmx_out").asText()));
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            synchronized (out) {
                try { out.flush(); } catch (IOException e) { /* nothing more to do */ }
            }
        }));
        List<Thread> threads = new ArrayList<>();
        for (JsonNode b : spec.get("jmx")) {
            int broker = b.get("broker").asInt();
            int port = b.get("port").asInt();
            String host = b.has("host") ? b.get("host").asText() : "127.0.0.1";
            Thread t = new Thread(() -> poll(broker, host, port, GAUGES, interval, duration, out), "jmx-" + broker);
            t.setDaemon(true);
            t.start();
            threads.add(t);
        }
        JsonNode controller = spec.get("jmx_controller");
        if (controller != null) {
            int port = controller.get("port").asInt();
            String host = controller.has("host") ? controller.get("host").asText() : "127.0.0.1";
            Thread t = new Thread(() -> poll(-1, host, port, CONTROLLER_GAUGES, interval, duration, out),
                                  "jmx-controller");
            t.setDaemon(true);
            t.start();
            threads.add(t);
        }
        for (Thread t : threads) t.join();
        synchronized (out) { out.close(); }
    }

    static void poll(int broker, String host, int port, String[][] gauges, double interval, double duration,
                     BufferedWriter out) {
        JMXConnector connector = null;
        MBeanServerConnection server = null;
        @SuppressWarnings("unchecked")
        Set<ObjectName>[] names = new Set[gauges.length];
        for (long k = 0; k * interval <= duration; k++) {
            long target = baseNanos + (long) (k * interval * 1e6);
            long wait;
            while ((wait = target - System.nanoTime()) > 0) LockSupport.parkNanos(wait);
            double t = k * interval;
            try {
                if (server == null) {
                    JMXServiceURL url = new JMXServiceURL("service:jmx:rmi:///jndi/rmi://" + host + ":" + port + "/jmxrmi");
                    connector = JMXConnectorFactory.connect(url);
                    server = connector.getMBeanServerConnection();
                    Arrays.fill(names, null);
                }
                if (k % NAMES_EVERY == 0) Arrays.fill(names, null);
                StringBuilder rows = new StringBuilder();
                for (int i = 0; i < gauges.length; i++) {
                    String[] g = gauges[i];
                    if (names[i] == null) names[i] = server.queryNames(new ObjectName(g[1]), null);
                    for (ObjectName name : names[i]) {
                        Object value;
                        try {
                            value = server.getAttribute(name, g[2]);
                        } catch (InstanceNotFoundException gone) {
                            names[i] = null;  // looked up again at the next sample
                            continue;
                        }
                        if (!(value instanceof Number)) continue;
                        String entity;
                        switch (g[3]) {
                            case "purgatory": entity = "broker-" + broker + "/" + name.getKeyProperty("delayedOperation"); break;
                            case "partition": entity = name.getKeyProperty("topic") + "-" + name.getKeyProperty("partition"); break;
                            case "replica": entity = name.getKeyProperty("topic") + "-" + name.getKeyProperty("partition") + "/replica-" + broker; break;
                            case "controller": entity = "controller"; break;
                            default: entity = "broker-" + broker;
                        }
                        // A partition's ISR gauges are its leader's (0 on a follower): only the leader's count.
                        if (g[3].equals("partition") && g[0].equals("IsrSize") && ((Number) value).doubleValue() == 0) continue;
                        if (g[3].equals("partition") && g[0].equals("IsrSize")) {
                            rows.append(String.format(Locale.ROOT, "%.3f\tLeaderId\t%s\t%d%n", t, entity, broker));
                        }
                        rows.append(String.format(Locale.ROOT, "%.3f\t%s\t%s\t%s%n", t, g[0], entity,
                                ((Number) value).doubleValue()));
                    }
                }
                synchronized (out) { out.write(rows.toString()); }
            } catch (Exception e) {
                server = null;
                try { if (connector != null) connector.close(); } catch (Exception ignored) { /* gone */ }
                connector = null;
            }
        }
    }
}
