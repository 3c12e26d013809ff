export { createKafkaLog } from './createKafkaLog.ts';
export type { KafkaLogOptions, KafkaLogLevel } from './KafkaLogOptions.ts';
export type { ConsumerErrorContext } from './KafkaGroupConsumer.ts';
export { kafkaErrorToFleetError } from './kafkaErrors.ts';
export type { FlushInfo } from './LingerProducer.ts';
