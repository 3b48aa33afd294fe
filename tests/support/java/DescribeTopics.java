// Prints what Kafka's own Java AdminClient describeTopics sees (3.8+: DescribeTopicPartitions
// when the broker advertises it, paging with partitionSizeLimitPerResponse; else Metadata).
//   java -cp <kafka-clients.jar>:<slf4j-api.jar> DescribeTopics.java host:port limit topic...
// One line per topic: "topic <name> internal=<bool> id=<uuid>", or "error <name> <exception>";
// one per partition: "partition <topic> <index> leader=<id|none> replicas=<ids> isr=<ids>
// elr=<ids> lastKnownElr=<ids>" (ids comma-separated, a broker the client does not know as -1).
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicCollection;
import org.apache.kafka.common.TopicPartitionInfo;

public class DescribeTopics {
    static String ids(List<Node> nodes) {
        if (nodes == null) return "null";
        List<String> out = new ArrayList<>();
        for (Node n : nodes) out.add(n == null ? "-1" : Integer.toString(n.id()));
        return String.join(",", out);
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        List<String> topics = Arrays.asList(args).subList(2, args.length);
        DescribeTopicsOptions options = new DescribeTopicsOptions()
            .partitionSizeLimitPerResponse(Integer.parseInt(args[1])).timeoutMs(60000);
        try (Admin admin = Admin.create(props)) {
            Map<String, KafkaFuture<TopicDescription>> result =
                admin.describeTopics(TopicCollection.ofTopicNames(topics), options).topicNameValues();
            for (String name : topics) {
                TopicDescription d;
                try {
                    d = result.get(name).get();
                } catch (ExecutionException e) {
                    System.out.println("error " + name + " " + e.getCause().getClass().getSimpleName());
                    continue;
                }
                System.out.println("topic " + d.name() + " internal=" + d.isInternal() + " id=" + d.topicId());
                for (TopicPartitionInfo p : d.partitions()) {
                    Node leader = p.leader();
                    System.out.println("partition " + d.name() + " " + p.partition()
                        + " leader=" + (leader == null ? "none" : Integer.toString(leader.id()))
                        + " replicas=" + ids(p.replicas()) + " isr=" + ids(p.isr())
                        + " elr=" + ids(p.elr()) + " lastKnownElr=" + ids(p.lastKnownElr()));
                }
            }
        }
    }
}
