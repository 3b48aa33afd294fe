// Kafka's own Java producer and consumer over many partitions, in two rounds, one consumer:
//   java -cp <kafka-clients.jar>:<slf4j-api.jar> ManyPartitionsConsume.java host:port topic partitions n
// Round r (1, 2): produces n records "<partition>:<offset>" to every partition (acks=all),
// then reads until it has them all.  The consumer stays open between rounds, so round 2 is
// read by the fetch session (KIP-227) round 1 set up.  Every record's value must name its
// own partition and offset.  Prints "round <r> <records read> <records out of place>" per
// round, or "error <exception>" when producing or consuming fails.
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class ManyPartitionsConsume {
    public static void main(String[] args) {
        String bootstrap = args[0];
        String topic = args[1];
        int partitions = Integer.parseInt(args[2]);
        int n = Integer.parseInt(args[3]);
        try {
            Properties p = new Properties();
            p.put("bootstrap.servers", bootstrap);
            p.put("acks", "all");
            p.put("linger.ms", "5");
            p.put("max.block.ms", "60000");
            p.put("key.serializer", StringSerializer.class.getName());
            p.put("value.serializer", StringSerializer.class.getName());
            Properties c = new Properties();
            c.put("bootstrap.servers", bootstrap);
            c.put("key.deserializer", StringDeserializer.class.getName());
            c.put("value.deserializer", StringDeserializer.class.getName());
            c.put("max.partition.fetch.bytes", "2048");   // several fetches per round
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < partitions; i++) tps.add(new TopicPartition(topic, i));
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(p);
                 KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
                consumer.assign(tps);
                consumer.seekToBeginning(tps);
                for (int round = 1; round <= 2; round++) {
                    for (int i = 0; i < n; i++)
                        for (int part = 0; part < partitions; part++)
                            producer.send(new ProducerRecord<>(topic, part, null,
                                part + ":" + ((round - 1) * n + i)));
                    producer.flush();
                    int read = 0, wrong = 0;
                    long deadline = System.currentTimeMillis() + 120000;
                    while (read < n * partitions && System.currentTimeMillis() < deadline)
                        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                            read++;
                            if (!r.value().equals(r.partition() + ":" + r.offset())) wrong++;
                        }
                    System.out.println("round " + round + " " + read + " " + wrong);
                }
            }
        } catch (Exception e) {
            System.out.println("error " + e.getClass().getName() + ": " + e.getMessage());
        }
        System.exit(0);
    }
}
