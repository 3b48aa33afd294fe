// Kafka's own Java producer as a replication test load: idempotent, acks=all, one record
// "J-<n>" (key "k<n>") at a time round-robin over the partitions, paced, until the stop file
// exists or the count is reached.  Every acknowledgement and every failed send is one JSONL
// line in the history file, in tests/support/replication_checker.py's format:
//   {"t":"ack","p":<partition>,"o":<offset>,"v":"J-<n>"}   {"t":"err","v":"J-<n>","err":"..."}
// Run with Kafka's client jars:
//   java -cp <kafka-clients.jar>:<slf4j-api.jar> AckedProducer.java host:port topic partitions count history stopfile
import java.io.BufferedWriter;
import java.io.FileWriter;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

public class AckedProducer {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        int partitions = Integer.parseInt(args[2]), count = Integer.parseInt(args[3]);
        String history = args[4], stopFile = args[5];
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "300000");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (PrintWriter out = new PrintWriter(new BufferedWriter(new FileWriter(history)));
             KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            for (int n = 0; n < count && !Files.exists(Paths.get(stopFile)); n++) {
                final String value = "J-" + n;
                producer.send(new ProducerRecord<>(topic, n % partitions, "k" + n, value), (md, e) -> {
                    synchronized (out) {
                        if (e == null) {
                            out.println("{\"t\":\"ack\",\"p\":" + md.partition() + ",\"o\":" + md.offset()
                                        + ",\"v\":\"" + value + "\"}");
                        } else {
                            out.println("{\"t\":\"err\",\"v\":\"" + value + "\",\"err\":\""
                                        + e.getClass().getSimpleName() + "\"}");
                        }
                        out.flush();
                    }
                });
                if (n % 10 == 9) {
                    Thread.sleep(10);  // about 1,000 records/s: the faults land mid-load
                }
            }
            producer.flush();
        }
        System.out.println("done");
    }
}
