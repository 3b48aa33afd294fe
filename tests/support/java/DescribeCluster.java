// Prints what Kafka's own Java AdminClient sees of a cluster: one line per broker
// ("broker <id> <host>:<port>") and "controller <id>".  Run with Kafka's client jars:
//   java -cp 'bench/kafka/jars/*' tests/support/java/DescribeCluster.java host:port
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.common.Node;

public class DescribeCluster {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        try (Admin admin = Admin.create(props)) {
            DescribeClusterResult r = admin.describeCluster();
            for (Node n : r.nodes().get()) {
                System.out.println("broker " + n.id() + " " + n.host() + ":" + n.port());
            }
            System.out.println("controller " + r.controller().get().id());
            System.out.println("cluster " + r.clusterId().get());
        }
    }
}
