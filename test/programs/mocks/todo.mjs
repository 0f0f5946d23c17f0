// A mysql2 client of the todo app whose MySQL 8 traffic Keploy recorded (keploy/samples-java
// spring-mysql-redis): logs in (caching_sha2_password), reads the isolation level, inserts a todo,
// lists the todos; writes what it got to todo-node-out.txt.
import { writeFileSync } from 'node:fs';
import mysql from 'mysql2/promise';

const [port, password] = process.argv.slice(2);
const conn = await mysql.createConnection({ host: '127.0.0.1', port: Number(port), user: 'yourusername', password, database: 'todoapp' });
const [[{ '@@session.transaction_isolation': iso }]] = await conn.query('SELECT @@session.transaction_isolation');
const [ok] = await conn.query("insert into todo (completed, description, title) values (0, 'Read the Spring Boot documentation and write some sample code', 'Learn Spring Boot')");
const [rows] = await conn.query('select todo0_.id as id1_0_, todo0_.completed as complete2_0_, todo0_.description as descript3_0_, todo0_.title as title4_0_ from todo todo0_');
await conn.end();
writeFileSync('todo-node-out.txt', `${iso} id=${ok.insertId} rows=${rows.map((r) => `${r.id1_0_}/${r.complete2_0_.toString('hex')}/${r.title4_0_}`).join(',')}\n`);
