export { createKafkaLog, type KafkaLogOptions, type KafkaLogLevel } from './createKafkaLog.ts';
export type { ConsumerErrorContext } from './KafkaGroupConsumer.ts';
export { kafkaErrorToFleetError } from './kafkaErrors.ts';
export type { FlushInfo } from './LingerProducer.ts';
