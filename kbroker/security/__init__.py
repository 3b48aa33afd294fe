"""security: who a client is and what it may do.

Theory of operation: ``listeners`` parses Kafka's listener settings (names, security
protocols, per-listener overrides); ``tls`` builds their SSLContexts; ``sasl_plain`` and
``sasl_scram`` are the SASL servers (credentials in ``scram_credentials``);
``authorizer.AclAuthorizer`` is Kafka's AclAuthorizer over an ACL table kept by
``acl_store`` (a log-dir file, or ZooKeeper through zk/); ``quotas`` enforces client quotas
as Kafka's ClientQuotaManager does (throttle times, not errors).  Handlers ask through the
``Authorizer`` port (``handlers.authorize``); with no authorizer configured it is
``AllowAll``.
"""
