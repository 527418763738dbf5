// kafkasim's gauge sampler inside each Kafka node of a real run: a metrics reporter (Kafka's `metric.reporters`,
// org.apache.kafka.common.metrics.MetricsReporter) whose thread reads the node's own MBeans every
// kafkasim.gauges.interval.ms from time 0 (the epoch millisecond in kafkasim.gauges.go.file) until
// kafkasim.gauges.duration.ms, and appends them as tab-separated rows (time_ms, metric, entity, value) to
// kafkasim.gauges.out: the gauges kafkasim also samples (kafkasim.real.jmx), the controller's for a controller.
//
// Why inside the node: a poller in a JVM of its own read them over remote JMX, a few dozen RMI calls per broker a
// sample, all brokers at once, and on two shared cores the records sent in the 150 ms after each sample made
// 76-88% of an acks=all run's slowest 1% (docs/calibration.md). Here a sample is the same reads of the platform
// MBean server in the process, no socket, no serialisation and no extra JVM.
//
// A sample more than half an interval late (the process was stopped: a pause fault, a stall) is skipped, as a
// paused broker missed the poller's samples; a restarted node appends from the next sample due.

import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.locks.LockSupport;
import javax.management.InstanceNotFoundException;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsReporter;

public class GaugeReporter implements MetricsReporter {
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

    private volatile boolean closed;
    private Thread thread;

    @Override
    public void configure(Map<String, ?> configs) {
        Object out = configs.get("kafkasim.gauges.out");
        if (out == null) return;  // a node of no kafkasim run: nothing to sample
        Path go = Paths.get(String.valueOf(configs.get("kafkasim.gauges.go.file")));
        double interval = Double.parseDouble(String.valueOf(configs.get("kafkasim.gauges.interval.ms")));
        double duration = Double.parseDouble(String.valueOf(configs.get("kafkasim.gauges.duration.ms")));
        boolean controller = !String.valueOf(configs.get("process.roles")).contains("broker");
        int node = Integer.parseInt(String.valueOf(configs.get("node.id")));
        Path path = Paths.get(String.valueOf(out));
        thread = new Thread(() -> sample(go, interval, duration, controller ? CONTROLLER_GAUGES : GAUGES, node, path),
                            "kafkasim-gauges");
        thread.setDaemon(true);
        thread.start();
    }

    private void sample(Path go, double interval, double duration, String[][] gauges, int node, Path path) {
        try {
            while (!closed && (!Files.exists(go) || Files.size(go) == 0)) Thread.sleep(20);
            if (closed) return;
            long t0 = Long.parseLong(new String(Files.readAllBytes(go), StandardCharsets.UTF_8).trim());
            long base = System.nanoTime() + (t0 - System.currentTimeMillis()) * 1_000_000L;
            MBeanServer server = ManagementFactory.getPlatformMBeanServer();
            endLine(path);  // a process killed in the middle of a row left it without its newline
            try (FileChannel w = FileChannel.open(path, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                                                  StandardOpenOption.APPEND)) {
                // A restarted node begins at the next sample due.
                long k = Math.max(0, (long) Math.ceil((System.nanoTime() - base) / (interval * 1e6)));
                for (; !closed && k * interval <= duration; k++) {
                    long target = base + (long) (k * interval * 1e6);
                    long wait;
                    while (!closed && (wait = target - System.nanoTime()) > 0) LockSupport.parkNanos(wait);
                    if (closed) return;
                    if (System.nanoTime() - target > interval * 1e6 / 2) continue;  // stopped meanwhile: missed
                    // One write of the whole sample: a node killed meanwhile leaves every sample whole or absent.
                    ByteBuffer bytes = ByteBuffer.wrap(rows(server, gauges, node, k * interval).getBytes(StandardCharsets.UTF_8));
                    while (bytes.hasRemaining()) w.write(bytes);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            System.err.println("kafkasim-gauges: " + e);
        }
    }

    static void endLine(Path path) throws IOException {
        if (!Files.exists(path) || Files.size(path) == 0) return;
        try (RandomAccessFile f = new RandomAccessFile(path.toFile(), "rw")) {
            f.seek(f.length() - 1);
            if (f.read() != '\n') f.write('\n');
        }
    }

    static String rows(MBeanServer server, String[][] gauges, int node, double t)
            throws Exception {
        StringBuilder rows = new StringBuilder();
        String time = String.format(Locale.ROOT, "%.3f", t);
        Set<String> led = new HashSet<>();  // the partitions this node leads (IsrSize comes before UnderMinIsr)
        for (int i = 0; i < gauges.length; i++) {
            String[] g = gauges[i];
            // Looked up at every sample: in the process that costs microseconds, and a partition created or deleted
            // meanwhile is seen at once.
            Set<ObjectName> names = server.queryNames(new ObjectName(g[1]), null);
            for (ObjectName name : names) {
                Object value;
                try {
                    value = server.getAttribute(name, g[2]);
                } catch (InstanceNotFoundException gone) {
                    continue;
                }
                if (!(value instanceof Number)) continue;
                String entity;
                switch (g[3]) {
                    case "purgatory": entity = "broker-" + node + "/" + name.getKeyProperty("delayedOperation"); break;
                    case "partition": entity = name.getKeyProperty("topic") + "-" + name.getKeyProperty("partition"); break;
                    case "replica": entity = name.getKeyProperty("topic") + "-" + name.getKeyProperty("partition") + "/replica-" + node; break;
                    case "controller": entity = "controller"; break;
                    default: entity = "broker-" + node;
                }
                // A partition's ISR gauges are its leader's, 0 on a follower (Partition's InSyncReplicasCount and
                // UnderMinIsr read the leader's state): only the leader's rows, one per partition as kafkasim's.
                if (g[3].equals("partition") && g[0].equals("IsrSize")) {
                    if (((Number) value).doubleValue() == 0) continue;
                    led.add(entity);
                    rows.append(time).append("\tLeaderId\t").append(entity).append('\t').append(node).append('\n');
                }
                if (g[3].equals("partition") && g[0].equals("UnderMinIsr") && !led.contains(entity)) continue;
                rows.append(time).append('\t').append(g[0]).append('\t').append(entity).append('\t')
                    .append(((Number) value).doubleValue()).append('\n');
            }
        }
        return rows.toString();
    }

    @Override
    public void init(List<KafkaMetric> metrics) { }

    @Override
    public void metricChange(KafkaMetric metric) { }

    @Override
    public void metricRemoval(KafkaMetric metric) { }

    @Override
    public void close() {
        closed = true;
        if (thread != null) LockSupport.unpark(thread);
    }
}
