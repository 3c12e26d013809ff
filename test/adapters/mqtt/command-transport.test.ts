/**
 * The CommandTransport contract (test/contracts/commandTransport.contract.ts) run by the embedded
 * gateway's transport and by ClientCommandTransport through a Mosquitto of its own (skipped
 * without the mosquitto binary).
 */
import { unless } from '../../support/suite.ts';
import { commandTransportContract } from '../../contracts/commandTransport.contract.ts';
import { mosquittoMissing } from '../../support/mosquittoProcess.ts';
import { embeddedWorld, externalWorld } from '../../support/mqttEdgeWorlds.ts';

commandTransportContract('embedded gateway', embeddedWorld);
unless('command transport contract: external broker', mosquittoMissing(), () => commandTransportContract('ClientCommandTransport (Mosquitto)', externalWorld));
