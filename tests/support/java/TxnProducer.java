// Kafka's Java producer running tests/support/txn_workload.py's scenario, then Kafka's Java
// AdminClient describing the partitions' producers (DescribeProducers).
//
// Usage: java -cp <kafka-clients:slf4j> TxnProducer.java BOOTSTRAP TOPIC PREFIX PARTITIONS PER_PARTITION COMMITS
//   COMMITS: one letter per transaction, C (commit) or A (abort), e.g. CACCAC.
// Prints, after the transactions: one line per partition and active producer
//   "producer <partition> <producerId> <epoch> <lastSequence> <coordinatorEpoch> <txnStartOffset or -1>"
// and "done" last.

import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class TxnProducer {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], prefix = args[2];
        int partitions = Integer.parseInt(args[3]), perPartition = Integer.parseInt(args[4]);
        String commits = args[5];
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, prefix + "-java-txn");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            producer.initTransactions();
            for (int i = 0; i < commits.length(); i++) {
                producer.beginTransaction();
                for (int p = 0; p < partitions; p++) {
                    for (int j = 0; j < perPartition; j++) {
                        String key = prefix + "-t" + i + "-p" + p + "-" + j;
                        String value = "value-" + i + "-" + p + "-" + j;
                        producer.send(new ProducerRecord<>(topic, p, key.getBytes(), value.getBytes())).get();
                    }
                }
                producer.flush();
                if (commits.charAt(i) == 'C') producer.commitTransaction();
                else producer.abortTransaction();
            }
        }
        Properties adminProps = new Properties();
        adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(adminProps)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int p = 0; p < partitions; p++) tps.add(new TopicPartition(topic, p));
            Map<TopicPartition, DescribeProducersResult.PartitionProducerState> states =
                admin.describeProducers(tps).all().get();
            for (TopicPartition tp : tps) {
                for (ProducerState s : states.get(tp).activeProducers()) {
                    System.out.println("producer " + tp.partition() + " " + s.producerId() + " " + s.producerEpoch()
                        + " " + s.lastSequence() + " " + s.coordinatorEpoch().orElse(-1)
                        + " " + s.currentTransactionStartOffset().orElse(-1L));
                }
            }
        }
        System.out.println("done");
    }
}
