/**
 * The CommandTransport contract (test/contracts/commandTransport.contract.ts) run by the embedded
 * gateway's transport, by the RelayedTransport reaching that gateway through the command relay,
 * and by ClientCommandTransport through a Mosquitto of its own (skipped without the mosquitto binary).
 */
import { unless } from '../../support/suite.ts';
import { commandTransportContract } from '../../contracts/commandTransport.contract.ts';
import { mosquittoMissing } from '../../support/mosquittoProcess.ts';
import { embeddedWorld, externalWorld, relayedWorld } from '../../support/mqttEdgeWorlds.ts';

commandTransportContract('embedded gateway', embeddedWorld);
commandTransportContract('RelayedTransport through the command relay', relayedWorld);
unless('command transport contract: external broker', mosquittoMissing(), () => commandTransportContract('ClientCommandTransport (Mosquitto)', externalWorld));
