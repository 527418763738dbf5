import org.apache.kafka.common.DirectoryId;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.metadata.PartitionChangeRecord;
import org.apache.kafka.controller.PartitionChangeBuilder;
import org.apache.kafka.metadata.LeaderRecoveryState;
import org.apache.kafka.metadata.PartitionRegistration;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.MetadataVersion;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.*;
import java.util.stream.Collectors;

/**
 * kafkasim's differential oracle for PartitionChangeBuilder (tests/real/test_partition_change_oracle.py), run
 * with Java's source launcher against Kafka's jars. Reads one case a line:
 *   replicas;isr;elr;lastKnownElr;leader;recovery;acceptable;minIsr;election;targetIsr|-;unclean|-;useLastKnownLeader;targetRecovery|-
 * (lists comma-separated, possibly empty; recovery 0 RECOVERED / 1 RECOVERING) and prints Kafka 4.3.1's
 * PartitionChangeBuilder.build() result:  NONE  or  leader;isr;elr;lastKnownElr;recovery  (fields "null" when unset).
 * "hash a,b,c" lines print the iteration order of a HashSet<Integer> filled in that order.
 */
public class PartitionChangeOracle {
    static int[] ints(String s) {
        if (s.isEmpty()) return new int[0];
        return Arrays.stream(s.split(",")).mapToInt(Integer::parseInt).toArray();
    }
    static List<Integer> list(String s) {
        return Arrays.stream(ints(s)).boxed().collect(Collectors.toList());
    }
    static String str(List<Integer> l) {
        return l == null ? "null" : l.stream().map(String::valueOf).collect(Collectors.joining(","));
    }
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            if (line.startsWith("hash")) {
                // "hash a,b|c,d": new HashSet<>(List.of(a, b)), then add(c), add(d)
                String body = line.length() > 5 ? line.substring(5).trim() : "";
                String[] parts = body.split("\\|", -1);
                Set<Integer> set = new HashSet<>(list(parts[0]));
                if (parts.length > 1) for (int i : ints(parts[1])) set.add(i);
                System.out.println(set.stream().map(String::valueOf).collect(Collectors.joining(",")));
                continue;
            }
            String[] f = line.split(";", -1);
            int[] replicas = ints(f[0]);
            PartitionRegistration p = new PartitionRegistration.Builder()
                .setReplicas(replicas)
                .setDirectories(DirectoryId.migratingArray(replicas.length))
                .setIsr(ints(f[1])).setElr(ints(f[2])).setLastKnownElr(ints(f[3]))
                .setLeader(Integer.parseInt(f[4]))
                .setLeaderRecoveryState(LeaderRecoveryState.of(Byte.parseByte(f[5])))
                .setLeaderEpoch(100).setPartitionEpoch(200).build();
            Set<Integer> acceptable = new HashSet<>(list(f[6]));
            PartitionChangeBuilder b = new PartitionChangeBuilder(p, Uuid.fromString("FbrrdcfiR-KC2CPSTHaJrg"), 0,
                acceptable::contains, MetadataVersion.IBP_4_0_IV1, Integer.parseInt(f[7]), true)
                .setElection(PartitionChangeBuilder.Election.valueOf(f[8]))
                .setDefaultDirProvider(uuid -> DirectoryId.UNASSIGNED)
                .setUseLastKnownLeaderInBalancedRecovery(Boolean.parseBoolean(f[11]));
            if (!f[9].equals("-")) b.setTargetIsr(list(f[9]));
            if (!f[10].equals("-")) b.setUncleanShutdownReplicas(list(f[10]));
            if (!f[12].equals("-")) b.setTargetLeaderRecoveryState(LeaderRecoveryState.of(Byte.parseByte(f[12])));
            Optional<ApiMessageAndVersion> r = b.build();
            if (r.isEmpty()) { System.out.println("NONE"); continue; }
            PartitionChangeRecord rec = (PartitionChangeRecord) r.get().message();
            if (rec.replicas() != null || rec.directories() != null || rec.removingReplicas() != null || rec.addingReplicas() != null)
                throw new IllegalStateException("assignment changed: " + rec);
            System.out.println(rec.leader() + ";" + str(rec.isr()) + ";" + str(rec.eligibleLeaderReplicas()) + ";" +
                str(rec.lastKnownElr()) + ";" + rec.leaderRecoveryState());
        }
    }
}
