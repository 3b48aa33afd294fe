// Kafka's own Java consumer (kafka-clients 4.x) in the consumer group protocol (KIP-848,
// group.protocol=consumer) as a test member, like tests/support/consumer_protocol_member.py:
// every record is committed (commitSync of its next offset) and then written to the output
// file as "value partition offset"; every assignment change as "assigned t:p,...".  A
// subscription starting with "^" is a broker-side regex (SubscriptionPattern, RE2/J).
// Runs until killed, or until SIGTERM (closes cleanly: "closed").  A commit the group refuses
// writes nothing.  GROUP_PROTOCOL=classic in the environment makes it a classic member.
//   java -cp <kafka-clients-4.x.jar>:<slf4j-api.jar> ConsumerProtocolMember.java \
//        host:port group subscription outfile [instance-id]
import java.io.FileWriter;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;

public class ConsumerProtocolMember {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], group = args[1], subscription = args[2], outfile = args[3];
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        String protocol = System.getenv().getOrDefault("GROUP_PROTOCOL", "consumer");
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        if (protocol.equals("classic")) props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        if (args.length > 4) props.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, args[4]);
        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props);
        CountDownLatch closed = new CountDownLatch(1);
        Thread main = Thread.currentThread();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            consumer.wakeup();
            try { closed.await(); } catch (InterruptedException e) { }
        }));
        if (subscription.startsWith("^")) consumer.subscribe(new SubscriptionPattern(subscription));
        else consumer.subscribe(Arrays.asList(subscription.split(",")));
        try (PrintWriter out = new PrintWriter(new FileWriter(outfile, true), true)) {
            List<String> last = null;
            try {
                while (true) {
                    var records = consumer.poll(Duration.ofMillis(100));
                    List<String> now = new ArrayList<>();
                    for (TopicPartition tp : consumer.assignment()) now.add(tp.topic() + ":" + tp.partition());
                    Collections.sort(now);
                    if (!now.equals(last)) {
                        last = now;
                        out.println("assigned " + String.join(",", now));
                    }
                    for (ConsumerRecord<String, String> r : records) {
                        try {
                            consumer.commitSync(Map.of(new TopicPartition(r.topic(), r.partition()),
                                                       new OffsetAndMetadata(r.offset() + 1)));
                        } catch (WakeupException e) {
                            throw e;
                        } catch (KafkaException e) {
                            continue;   // not committed: the partition's next owner reads it again
                        }
                        out.println(r.value() + " " + r.partition() + " " + r.offset());
                    }
                }
            } catch (WakeupException e) {
                consumer.close();
                out.println("closed");
            }
        } finally {
            closed.countDown();
        }
    }
}
