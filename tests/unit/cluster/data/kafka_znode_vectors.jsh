// Reference znode bytes from Kafka 3.9.1 itself, for tests/unit/cluster/data/kafka_3_9_znodes.txt.
// Run: a pom with org.apache.kafka:kafka_2.13:3.9.1, mvn dependency:copy-dependencies -DoutputDirectory=jars,
// then  jshell --class-path "$(ls jars/*.jar | tr '\\n' :)" kafka_znode_vectors.jsh
import kafka.zk.*;
import kafka.controller.*;
import kafka.cluster.EndPoint;
import org.apache.kafka.common.*;
import org.apache.kafka.common.network.ListenerName;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.metadata.LeaderRecoveryState;
import scala.jdk.javaapi.CollectionConverters;
String s(byte[] b) { return new String(b, java.nio.charset.StandardCharsets.UTF_8); }
scala.collection.immutable.List<Object> L(Integer... xs) { return CollectionConverters.asScala(java.util.Arrays.asList((Object[])xs)).toList(); }
scala.collection.Seq<Object> S(Integer... xs) { return L(xs); }
System.out.println("CONTROLLER " + s(ControllerZNode.encode(2, 1700000000000L, -1)));
System.out.println("CONTROLLER_K " + s(ControllerZNode.encode(2, 1700000000000L, 5)));
System.out.println("EPOCH " + s(ControllerEpochZNode.encode(7)));
System.out.println("CLUSTERID " + s(ClusterIdZNode.toJson("abcDEF123-_xyzAAAAAAAA")));
var la = kafka.api.LeaderAndIsr.apply(1, 5, L(1,2,3), LeaderRecoveryState.RECOVERED, 0);
System.out.println("STATE " + s(TopicPartitionStateZNode.encode(new LeaderIsrAndControllerEpoch(la, 7))));
var lr = kafka.api.LeaderAndIsr.apply(3, 6, L(3), LeaderRecoveryState.RECOVERING, 0);
System.out.println("STATE_RECOVERING " + s(TopicPartitionStateZNode.encode(new LeaderIsrAndControllerEpoch(lr, 7))));
for (int n : new int[]{1,2,3,5,11,12,13,16,24,25,50,100,200}) {
  var m = new java.util.LinkedHashMap<TopicPartition, ReplicaAssignment>();
  for (int p = 0; p < n; p++) m.put(new TopicPartition("t", p), ReplicaAssignment.apply(S(p % 3 + 1, (p+1) % 3 + 1)));
  System.out.println("TOPIC_" + n + " " + s(TopicZNode.encode(scala.Option.apply(Uuid.fromString("vgtz6QvZQ4aiRzI4Ad8Qsg")), CollectionConverters.asScala(m))));
}
{
  var m = new java.util.LinkedHashMap<TopicPartition, ReplicaAssignment>();
  m.put(new TopicPartition("t", 0), ReplicaAssignment.apply(S(1,2,3), S(3), S(1)));
  m.put(new TopicPartition("t", 1), ReplicaAssignment.apply(S(2,3)));
  System.out.println("TOPIC_REASSIGN " + s(TopicZNode.encode(scala.Option.apply(Uuid.fromString("vgtz6QvZQ4aiRzI4Ad8Qsg")), CollectionConverters.asScala(m))));
  System.out.println("TOPIC_NOID " + s(TopicZNode.encode(scala.Option.empty(), CollectionConverters.asScala(m))));
}
var ep1 = new EndPoint("localhost", 9092, ListenerName.forSecurityProtocol(SecurityProtocol.PLAINTEXT), SecurityProtocol.PLAINTEXT);
var ep2 = new EndPoint("127.0.0.1", 9093, new ListenerName("INTERNAL"), SecurityProtocol.PLAINTEXT);
var eps = CollectionConverters.asScala(java.util.List.of(ep1)).toSeq();
var eps2 = CollectionConverters.asScala(java.util.List.of(ep1, ep2)).toSeq();
var feats = org.apache.kafka.common.feature.Features.emptySupportedFeatures();
System.out.println("BROKER " + s(BrokerIdZNode.encode(5, "localhost", 9092, eps, -1, scala.Option.empty(), feats)));
System.out.println("BROKER_RACK " + s(BrokerIdZNode.encode(5, "localhost", 9092, eps2, 9999, scala.Option.apply("rack-a"), feats)));
var fm = new java.util.HashMap<String, org.apache.kafka.common.feature.SupportedVersionRange>();
fm.put("metadata.version", new org.apache.kafka.common.feature.SupportedVersionRange((short)1, (short)21));
System.out.println("BROKER_FEAT " + s(BrokerIdZNode.encode(5, "localhost", 9092, eps, -1, scala.Option.empty(), org.apache.kafka.common.feature.Features.supportedFeatures(fm))));
var props = new java.util.Properties(); props.setProperty("retention.ms", "1000"); props.setProperty("cleanup.policy", "compact");
System.out.println("CONFIG " + s(ConfigEntityZNode.encode(props)));
System.out.println("CONFIG_EMPTY " + s(ConfigEntityZNode.encode(new java.util.Properties())));
System.out.println("CHANGE " + s(ConfigEntityChangeNotificationSequenceZNode.encode("topics/foo")));
System.out.println("CHANGE_PATH " + ConfigEntityChangeNotificationSequenceZNode.createPath());
var tps = CollectionConverters.asScala(java.util.List.of(new TopicPartition("t", 0))).toSet();
System.out.println("LOGDIREVENT " + s(LogDirEventNotificationSequenceZNode.encode(3)));
var ra = new java.util.LinkedHashMap<TopicPartition, scala.collection.Seq<Object>>(); ra.put(new TopicPartition("t", 0), S(1,2));
System.out.println("REASSIGN " + s(ReassignPartitionsZNode.encode(CollectionConverters.asScala(ra))));
System.out.println("FEATURE " + s(FeatureZNode.encode(FeatureZNode.apply(2, FeatureZNodeStatus.Enabled$.MODULE$, CollectionConverters.asScala(new java.util.HashMap<String,Object>())))));
System.out.println("PATHS " + TopicPartitionStateZNode.path(new TopicPartition("t", 3)) + " " + ConfigEntityZNode.path("brokers", "<default>") + " " + DeleteTopicsTopicZNode.path("t") + " " + ReassignPartitionsZNode.path() + " " + PreferredReplicaElectionZNode.path() + " " + BrokerSequenceIdZNode.path() + " " + IsrChangeNotificationSequenceZNode.path("0000000001") + " " + LogDirEventNotificationSequenceZNode.path("0000000001") + " " + FeatureZNode.path() + " " + ProducerIdBlockZNode.path() + " " + MigrationZNode.path());
scala.collection.immutable.Set<TopicPartition> tps = CollectionConverters.asScala(java.util.List.of(new TopicPartition("t", 0), new TopicPartition("u", 2))).toSet();
System.out.println("PREFERRED " + s(PreferredReplicaElectionZNode.encode(tps)));
System.out.println("ISRCHANGE " + s(IsrChangeNotificationSequenceZNode.encode(tps)));
String[][] cfgs = {
 {"retention.ms","1000","cleanup.policy","compact"},
 {"cleanup.policy","compact","retention.ms","1000"},
 {"a","1","q","2","Q","3","segment.bytes","4","min.insync.replicas","2","compression.type","zstd","max.message.bytes","5","retention.bytes","6","flush.ms","7","delete.retention.ms","8","segment.ms","9","message.timestamp.type","LogAppendTime","x1","1","x2","2","x3","3"},
 {"x3","3","x2","2","x1","1","message.timestamp.type","LogAppendTime","segment.ms","9","delete.retention.ms","8","flush.ms","7","retention.bytes","6","max.message.bytes","5","compression.type","zstd","min.insync.replicas","2","segment.bytes","4","Q","3","q","2","a","1"},
};
for (String[] c : cfgs) { var p = new java.util.Properties(); for (int i = 0; i < c.length; i += 2) p.setProperty(c[i], c[i+1]); System.out.println("CONFIG " + String.join(",", c) + " " + s(ConfigEntityZNode.encode(p))); }
var l = new java.util.ArrayList<EndPoint>();
String[] names = {"PLAINTEXT","INTERNAL","EXTERNAL","REPLICATION","CONTROL","SSL"};
for (int i = 0; i < names.length; i++) l.add(new EndPoint("h", 9092 + i, new ListenerName(names[i]), SecurityProtocol.PLAINTEXT));
for (int n = 1; n <= 6; n++) System.out.println("BROKER_L" + n + " " + s(BrokerIdZNode.encode(5, "h", 9092, CollectionConverters.asScala(l.subList(0, n)).toSeq(), -1, scala.Option.empty(), org.apache.kafka.common.feature.Features.emptySupportedFeatures())));
var l2 = new java.util.ArrayList<EndPoint>(); l2.add(new EndPoint("h", 9093, new ListenerName("INTERNAL"), SecurityProtocol.PLAINTEXT));
System.out.println("BROKER_NOPLAIN " + s(BrokerIdZNode.encode(l2.isEmpty() ? 5 : 5, null, -1, CollectionConverters.asScala(l2).toSeq(), -1, scala.Option.apply("r1"), org.apache.kafka.common.feature.Features.emptySupportedFeatures())));
/exit
