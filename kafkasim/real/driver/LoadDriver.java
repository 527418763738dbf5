// kafkasim's load driver for a real Kafka cluster: Kafka's own Java producer and consumer (kafka-clients),
// driven open loop from a schedule kafkasim drew from the scenario's seed (kafkasim.real.schedule).
//
//   java -cp CLASSES:LIBS/* LoadDriver run SPEC.json     create the topics, run the producers and consumers
//   java -cp CLASSES:LIBS/* LoadDriver audit SPEC.json   read every partition's log from offset 0
//
// `run`: creates the topics with the spec's replica assignment and configs (Admin.createTopics), builds the
// clients, fetches their metadata, writes the spec's ready file, then waits for its go file, which holds the
// epoch millisecond that is time 0 of the run. Each producer thread sends its records at their intended times
// (time 0 + intended ms) whatever the cluster does: a record's latency counts from its intended time, so a
// slow cluster shows as latency, not as less load (no coordinated omission). Each record's value starts with
// the producer's index and the record's sequence number (16 bytes), which the consumers and the audit read
// back. At time 0 + duration the producers stop sending and are closed (waiting drain_ms for what is in
// flight), the consumers stop polling, and every table is written to out_dir:
//   producer-<i>.tsv  seq, intended_ms, send_ms (send() called), ack_ms (callback), partition, offset, error
//   consumer-<i>.tsv  producer index, seq, partition, offset, seen_ms (the poll that returned it)
//   topics.tsv        topic, topic id
// Times are ms since time 0 (System.nanoTime from the instant the wall clock reached time 0).
// `audit`: per topic, a consumer assigned every partition reads from the beginning up to the end offsets
// and writes audit.tsv: topic, partition, offset, producer index, seq.
// SIGTERM (Ctrl-C of kafkasim) ends a run early: the shutdown hook writes what was recorded so far.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedWriter;
import java.io.DataInputStream;
import java.io.BufferedInputStream;
import java.io.FileInputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class LoadDriver {
    static final int MAGIC = 0x6b73696d; // "ksim"
    static final ObjectMapper JSON = new ObjectMapper();
    static volatile long baseNanos;

    static double now() {
        return (System.nanoTime() - baseNanos) / 1e6;
    }

    public static void main(String[] args) throws Exception {
        JsonNode spec = JSON.readTree(Files.readAllBytes(Paths.get(args[1])));
        if (args[0].equals("run")) {
            run(spec);
        } else if (args[0].equals("audit")) {
            audit(spec);
        } else {
            throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    static Properties props(JsonNode config) {
        Properties p = new Properties();
        Iterator<Map.Entry<String, JsonNode>> fields = config.fields();
        while (fields.hasNext()) {
            Map.Entry<String, JsonNode> e = fields.next();
            p.put(e.getKey(), e.getValue().asText());
        }
        return p;
    }

    // --- topics ---------------------------------------------------------------------------------------

    static void createTopics(JsonNode spec, Path out) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, spec.get("bootstrap").asText());
        p.put(AdminClientConfig.CLIENT_ID_CONFIG, "kafkasim-admin");
        try (Admin admin = Admin.create(p)) {
            List<NewTopic> topics = new ArrayList<>();
            List<String> names = new ArrayList<>();
            for (JsonNode t : spec.get("topics")) {
                Map<Integer, List<Integer>> assignment = new HashMap<>();
                int i = 0;
                for (JsonNode replicas : t.get("replicas")) {
                    List<Integer> ids = new ArrayList<>();
                    for (JsonNode r : replicas) ids.add(r.asInt());
                    assignment.put(i++, ids);
                }
                Map<String, String> configs = new HashMap<>();
                Iterator<Map.Entry<String, JsonNode>> fields = t.get("config").fields();
                while (fields.hasNext()) {
                    Map.Entry<String, JsonNode> e = fields.next();
                    configs.put(e.getKey(), e.getValue().asText());
                }
                topics.add(new NewTopic(t.get("name").asText(), assignment).configs(configs));
                names.add(t.get("name").asText());
            }
            CreateTopicsResult created = admin.createTopics(topics);
            created.all().get(60, TimeUnit.SECONDS);
            // Wait until every partition has its preferred leader (the first replica).
            long deadline = System.currentTimeMillis() + 60_000;
            Map<String, TopicDescription> described;
            while (true) {
                try {
                    described = admin.describeTopics(names).allTopicNames().get(30, TimeUnit.SECONDS);
                } catch (java.util.concurrent.ExecutionException e) {
                    // A topic just created may not be in every broker's metadata yet.
                    if (System.currentTimeMillis() > deadline) throw e;
                    Thread.sleep(100);
                    continue;
                }
                boolean ready = true;
                for (TopicDescription d : described.values()) {
                    for (TopicPartitionInfo info : d.partitions()) {
                        if (info.leader() == null || info.replicas().isEmpty()
                                || info.leader().id() != info.replicas().get(0).id()
                                || info.isr().size() != info.replicas().size()) ready = false;
                    }
                }
                if (ready || System.currentTimeMillis() > deadline) break;
                Thread.sleep(100);
            }
            try (BufferedWriter w = Files.newBufferedWriter(out.resolve("topics.tsv"))) {
                for (TopicDescription d : described.values()) {
                    w.write(d.name() + "\t" + d.topicId() + "\n");
                }
            }
        }
    }

    // --- producers ------------------------------------------------------------------------------------

    static final class ProducerRun implements Runnable {
        final int index;
        final String name;
        final String topic;
        final KafkaProducer<byte[], byte[]> producer;
        final double[] intended;
        final int[] size;
        final int[] partitionPlan;
        final double[] sendMs;
        final double[] ackMs;
        final int[] partition;
        final long[] offset;
        final String[] error;
        volatile int sent = 0;

        ProducerRun(int index, JsonNode p, Path schedule) throws IOException {
            this.index = index;
            this.name = p.get("name").asText();
            this.topic = p.get("topic").asText();
            int count = p.get("count").asInt();
            intended = new double[count];
            size = new int[count];
            partitionPlan = new int[count];
            try (DataInputStream in = new DataInputStream(new BufferedInputStream(new FileInputStream(schedule.toFile())))) {
                for (int i = 0; i < count; i++) {
                    intended[i] = in.readDouble();
                    size[i] = in.readInt();
                    partitionPlan[i] = in.readInt();
                }
            }
            sendMs = new double[count];
            ackMs = new double[count];
            partition = new int[count];
            offset = new long[count];
            error = new String[count];
            java.util.Arrays.fill(sendMs, Double.NaN);
            java.util.Arrays.fill(ackMs, Double.NaN);
            java.util.Arrays.fill(partition, -1);
            java.util.Arrays.fill(offset, -1L);
            Properties props = props(p.get("config"));
            props.put("key.serializer", ByteArraySerializer.class.getName());
            props.put("value.serializer", ByteArraySerializer.class.getName());
            producer = new KafkaProducer<>(props);
        }

        public void run() {
            for (int i = 0; i < intended.length; i++) {
                long target = baseNanos + (long) (intended[i] * 1e6);
                long wait;
                while ((wait = target - System.nanoTime()) > 0) LockSupport.parkNanos(wait);
                if (stopping.get()) break;
                ByteBuffer value = ByteBuffer.allocate(Math.max(16, size[i]));
                value.putInt(MAGIC).putInt(index).putLong(i);
                Integer part = partitionPlan[i] >= 0 ? partitionPlan[i] : null;
                final int seq = i;
                sendMs[i] = now();
                try {
                    producer.send(new ProducerRecord<>(topic, part, null, value.array()), (RecordMetadata md, Exception e) -> {
                        ackMs[seq] = now();
                        if (md != null) {
                            partition[seq] = md.partition();
                            offset[seq] = md.hasOffset() ? md.offset() : -1L;
                        }
                        if (e != null) error[seq] = e.getClass().getSimpleName();
                    });
                } catch (RuntimeException e) {
                    ackMs[i] = now();
                    error[i] = e.getClass().getSimpleName();
                }
                sent = i + 1;
            }
        }

        void write(Path out) throws IOException {
            try (BufferedWriter w = Files.newBufferedWriter(out.resolve("producer-" + index + ".tsv"))) {
                int n = sent;
                for (int i = 0; i < n; i++) {
                    w.write(i + "\t" + fmt(intended[i]) + "\t" + fmt(sendMs[i]) + "\t" + fmt(ackMs[i]) + "\t"
                            + partition[i] + "\t" + offset[i] + "\t" + (error[i] == null ? "" : error[i]) + "\n");
                }
            }
            try (BufferedWriter w = Files.newBufferedWriter(out.resolve("producer-" + index + "-metrics.tsv"))) {
                for (Map.Entry<MetricName, ? extends Metric> e : producer.metrics().entrySet()) {
                    MetricName m = e.getKey();
                    if (m.group().equals("producer-metrics") && (m.name().equals("record-retry-total")
                            || m.name().equals("record-error-total") || m.name().equals("record-send-total"))) {
                        w.write(m.name() + "\t" + e.getValue().metricValue() + "\n");
                    }
                }
            }
        }
    }

    static String fmt(double v) {
        return Double.isNaN(v) ? "" : String.format(java.util.Locale.ROOT, "%.3f", v);
    }

    // --- consumers ------------------------------------------------------------------------------------

    static final class ConsumerRun implements Runnable {
        final int index;
        final KafkaConsumer<byte[], byte[]> consumer;
        final double endMs;
        final StringBuilder rows = new StringBuilder();
        volatile boolean done = false;

        ConsumerRun(int index, JsonNode c, double endMs) {
            this.index = index;
            this.endMs = endMs;
            Properties props = props(c.get("config"));
            props.put("key.deserializer", ByteArrayDeserializer.class.getName());
            props.put("value.deserializer", ByteArrayDeserializer.class.getName());
            consumer = new KafkaConsumer<>(props);
            List<TopicPartition> parts = new ArrayList<>();
            for (JsonNode p : c.get("partitions")) parts.add(new TopicPartition(c.get("topic").asText(), p.asInt()));
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            for (TopicPartition tp : parts) consumer.position(tp, Duration.ofSeconds(60));
        }

        public void run() {
            try {
                while (!stopping.get() && now() < endMs) {
                    ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(50));
                    double seen = now();
                    for (ConsumerRecord<byte[], byte[]> r : records) {
                        ByteBuffer v = ByteBuffer.wrap(r.value());
                        if (r.value().length < 16 || v.getInt() != MAGIC) continue;
                        int producer = v.getInt();
                        long seq = v.getLong();
                        synchronized (rows) {
                            rows.append(producer).append('\t').append(seq).append('\t').append(r.partition())
                                .append('\t').append(r.offset()).append('\t').append(fmt(seen)).append('\n');
                        }
                    }
                }
            } catch (org.apache.kafka.common.errors.WakeupException e) {
                // stopped
            } finally {
                done = true;
            }
        }

        void write(Path out) throws IOException {
            synchronized (rows) {
                Files.write(out.resolve("consumer-" + index + ".tsv"), rows.toString().getBytes(StandardCharsets.UTF_8));
            }
        }
    }

    static final AtomicBoolean stopping = new AtomicBoolean(false);
    static final AtomicBoolean written = new AtomicBoolean(false);

    static void run(JsonNode spec) throws Exception {
        Path out = Paths.get(spec.get("out_dir").asText());
        createTopics(spec, out);
        double duration = spec.get("duration_ms").asDouble();
        List<ProducerRun> producers = new ArrayList<>();
        int i = 0;
        for (JsonNode p : spec.get("producers")) {
            producers.add(new ProducerRun(i, p, Paths.get(p.get("schedule").asText())));
            i++;
        }
        for (ProducerRun p : producers) p.producer.partitionsFor(p.topic);
        warmUp(spec, producers);
        List<ConsumerRun> consumers = new ArrayList<>();
        i = 0;
        for (JsonNode c : spec.get("consumers")) consumers.add(new ConsumerRun(i++, c, duration));
        Files.write(Paths.get(spec.get("ready_file").asText()), "ready\n".getBytes(StandardCharsets.UTF_8));
        Path go = Paths.get(spec.get("go_file").asText());
        while (!Files.exists(go) || Files.size(go) == 0) Thread.sleep(5);
        long t0 = Long.parseLong(new String(Files.readAllBytes(go), StandardCharsets.UTF_8).trim());
        while (System.currentTimeMillis() < t0) { /* spin to the millisecond */ }
        baseNanos = System.nanoTime();
        final List<ProducerRun> ps = producers;
        final List<ConsumerRun> cs = consumers;
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            if (!written.get()) {
                stopping.set(true);
                for (ProducerRun p : ps) p.producer.close(Duration.ZERO);
                writeAll(ps, cs, out);
            }
        }));
        List<Thread> threads = new ArrayList<>();
        for (ConsumerRun c : consumers) threads.add(new Thread(c, "consumer-" + c.index));
        for (ProducerRun p : producers) threads.add(new Thread(p, "producer-" + p.index));
        for (Thread t : threads) t.start();
        long end = baseNanos + (long) (duration * 1e6);
        long wait;
        while ((wait = end - System.nanoTime()) > 0) LockSupport.parkNanos(wait);
        stopping.set(true);
        long drain = spec.get("drain_ms").asLong();
        for (ProducerRun p : producers) p.producer.close(Duration.ofMillis(drain));
        for (Thread t : threads) t.join(5_000);
        for (ConsumerRun c : consumers) {
            c.consumer.wakeup();
        }
        writeAll(producers, consumers, out);
        for (ConsumerRun c : consumers) {
            try {
                c.consumer.close(Duration.ofSeconds(1));
            } catch (RuntimeException e) {
                // closing after a wakeup may throw; the tables are written
            }
        }
    }

    // A fresh JVM's first second is slow (class loading, JIT, the first connections): each producer sends
    // warm_ms of its load to a warm-up topic placed like the first topic, in parallel, before time 0; the
    // topic is deleted before the run starts.
    static void warmUp(JsonNode spec, List<ProducerRun> producers) throws Exception {
        long warmMs = spec.get("warmup_ms").asLong();
        if (warmMs <= 0 || producers.isEmpty()) return;
        String topic = "__kafkasim_warmup";
        JsonNode first = spec.get("topics").get(0);
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, spec.get("bootstrap").asText());
        try (Admin admin = Admin.create(p)) {
            Map<Integer, List<Integer>> assignment = new HashMap<>();
            int i = 0;
            for (JsonNode replicas : first.get("replicas")) {
                List<Integer> ids = new ArrayList<>();
                for (JsonNode r : replicas) ids.add(r.asInt());
                assignment.put(i++, ids);
            }
            admin.createTopics(List.of(new NewTopic(topic, assignment))).all().get(60, TimeUnit.SECONDS);
            final int partitions = i;
            List<Thread> threads = new ArrayList<>();
            for (ProducerRun run : producers) {
                Thread t = new Thread(() -> {
                    double rate = Math.max(1.0, run.intended.length / Math.max(1.0, spec.get("duration_ms").asDouble() / 1000.0));
                    long count = Math.min(5000L, (long) (rate * warmMs / 1000.0));
                    long gapNanos = (long) (1e9 / rate);
                    long next = System.nanoTime();
                    for (long k = 0; k < count; k++) {
                        long wait;
                        while ((wait = next - System.nanoTime()) > 0) LockSupport.parkNanos(wait);
                        next += gapNanos;
                        int size = run.size.length > 0 ? Math.max(16, run.size[0]) : 16;
                        try {
                            run.producer.send(new ProducerRecord<>(topic, (int) (k % partitions), null, new byte[size]));
                        } catch (RuntimeException e) {
                            return;
                        }
                    }
                    run.producer.flush();
                });
                t.start();
                threads.add(t);
            }
            for (Thread t : threads) t.join(warmMs + 60_000);
            admin.deleteTopics(List.of(topic)).all().get(60, TimeUnit.SECONDS);
        }
    }

    static synchronized void writeAll(List<ProducerRun> producers, List<ConsumerRun> consumers, Path out) {
        if (written.get()) return;
        try {
            for (ProducerRun p : producers) p.write(out);
            for (ConsumerRun c : consumers) c.write(out);
            Files.write(out.resolve("done"), "done\n".getBytes(StandardCharsets.UTF_8));
            written.set(true);
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
    }

    // --- audit ----------------------------------------------------------------------------------------

    static void audit(JsonNode spec) throws Exception {
        Path out = Paths.get(spec.get("out_dir").asText());
        Properties props = new Properties();
        props.put("bootstrap.servers", spec.get("bootstrap").asText());
        props.put("client.id", "kafkasim-audit");
        props.put("enable.auto.commit", "false");
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        long timeoutMs = spec.get("audit_timeout_ms").asLong();
        try (BufferedWriter w = Files.newBufferedWriter(out.resolve("audit.tsv"));
             KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            List<TopicPartition> parts = new ArrayList<>();
            for (JsonNode t : spec.get("topics")) {
                for (int p = 0; p < t.get("replicas").size(); p++) parts.add(new TopicPartition(t.get("name").asText(), p));
            }
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            long deadline = System.currentTimeMillis() + timeoutMs;
            Map<TopicPartition, Long> ends = new HashMap<>();
            while (ends.isEmpty() && System.currentTimeMillis() < deadline) {
                try {
                    ends = consumer.endOffsets(parts, Duration.ofSeconds(10));
                } catch (org.apache.kafka.common.errors.TimeoutException e) {
                    // a partition without a leader yet: try again until the deadline
                }
            }
            Map<TopicPartition, Long> begins = consumer.beginningOffsets(parts, Duration.ofSeconds(10));
            for (TopicPartition tp : parts) {
                w.write("#end\t" + tp.topic() + "\t" + tp.partition() + "\t" + begins.getOrDefault(tp, -1L) + "\t"
                        + ends.getOrDefault(tp, -1L) + "\n");
            }
            final Map<TopicPartition, Long> endOffsets = ends;
            Set<TopicPartition> remaining = new java.util.HashSet<>();
            for (TopicPartition tp : parts) if (ends.getOrDefault(tp, 0L) > 0) remaining.add(tp);
            while (!remaining.isEmpty() && System.currentTimeMillis() < deadline) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    ByteBuffer v = ByteBuffer.wrap(r.value());
                    if (r.value().length >= 16 && v.getInt() == MAGIC) {
                        int producer = v.getInt();
                        long seq = v.getLong();
                        w.write(r.topic() + "\t" + r.partition() + "\t" + r.offset() + "\t" + producer + "\t" + seq + "\n");
                    }
                }
                remaining.removeIf(tp -> consumer.position(tp) >= endOffsets.get(tp));
            }
            for (TopicPartition tp : remaining) w.write("#incomplete\t" + tp.topic() + "\t" + tp.partition() + "\n");
        }
    }
}
