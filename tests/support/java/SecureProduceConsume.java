// Kafka's own Java producer and consumer over a secured listener (SSL, SASL_PLAINTEXT,
// SASL_SSL: whatever the client properties say).
//   java -cp <kafka-clients.jar>:<slf4j-api.jar> SecureProduceConsume.java host:port topic n key=value...
// Produces n records "v0".."v<n-1>" (acks=all) to partition 0 of topic, then reads partition 0
// from the beginning until it has n.  Prints "consumed <count> <first> <last>", or
// "error <exception class>: <message>" (the cause chain's first authentication error, else
// the exception) when producing or consuming fails.
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class SecureProduceConsume {
    public static void main(String[] args) {
        Properties common = new Properties();
        common.put("bootstrap.servers", args[0]);
        for (int i = 3; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            common.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        String topic = args[1];
        int n = Integer.parseInt(args[2]);
        try {
            Properties p = new Properties();
            p.putAll(common);
            p.put("acks", "all");
            p.put("max.block.ms", "30000");
            p.put("key.serializer", StringSerializer.class.getName());
            p.put("value.serializer", StringSerializer.class.getName());
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
                for (int i = 0; i < n; i++) producer.send(new ProducerRecord<>(topic, 0, null, "v" + i)).get();
            }
            Properties c = new Properties();
            c.putAll(common);
            c.put("key.deserializer", StringDeserializer.class.getName());
            c.put("value.deserializer", StringDeserializer.class.getName());
            List<String> got = new ArrayList<>();
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
                TopicPartition tp = new TopicPartition(topic, 0);
                consumer.assign(Collections.singletonList(tp));
                consumer.seekToBeginning(Collections.singletonList(tp));
                long deadline = System.currentTimeMillis() + 60000;
                while (got.size() < n && System.currentTimeMillis() < deadline)
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) got.add(r.value());
            }
            System.out.println("consumed " + got.size() + " " + (got.isEmpty() ? "-" : got.get(0)) + " "
                + (got.isEmpty() ? "-" : got.get(got.size() - 1)));
        } catch (Exception e) {
            Throwable t = e;
            while (t != null && !(t instanceof AuthenticationException)) t = t.getCause();
            Throwable shown = t != null ? t : e;
            System.out.println("error " + shown.getClass().getName() + ": " + shown.getMessage());
        }
        System.exit(0);
    }
}
