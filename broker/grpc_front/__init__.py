"""The RocketMQ 5 front (DESIGN section 14): ``apache.rocketmq.v2.MessagingService`` over gRPC on the broker's store."""
